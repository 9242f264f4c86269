"""`ask --explain`: the retrieval trace for people tuning settings, readable in 80 columns.

Each candidate takes two lines: rank, scores and channel ranks with the location, then the
symbol and why it was picked, wrapped under an indent.
"""
from __future__ import annotations

import textwrap


def _wrap(con, text: str, indent: str = "", first: str = "") -> None:
    width = max(40, min(getattr(con, "width", 80) or 80, 100))
    for line in textwrap.wrap(text, width=width, initial_indent=first or indent,
                              subsequent_indent=indent, break_on_hyphens=False) or [first]:
        con.print(line, markup=False, highlight=False)


def render_trace(con, trace, result, limit: int = 15) -> None:
    qa = trace.analysis
    con.print()
    if qa is not None:
        named = ", ".join([*(f for f in qa.files if f not in qa.word_files), *qa.symbols,
                           *qa.modules]) or "none"
        weakly = f"; perhaps meant as a file: {', '.join(qa.word_files)}" if qa.word_files else ""
        _wrap(con, f"intent {qa.intent or '-'}, expansion profile {qa.profile or '-'}, "
                   f"wanted {', '.join(qa.wanted) or '-'}; named in the question: {named}"
                   f"{weakly}", "  ", "query: ")
    if result.confidence is not None:
        _wrap(con, f"{result.confidence:.2f} from the retrieval evidence"
                   f" (answer by {result.answer_source}"
                   f"{': ' + result.answer_note if result.answer_note else ''})", "  ",
              "confidence: ")
    chosen = {e.chunk_id for e in result.evidence}
    con.print("candidates, best first (* = in the evidence; d/b = dense/BM25 rank):",
              markup=False, highlight=False)
    for n, row in enumerate(trace.rows[:limit], 1):
        d = "-" if row["dense_rank"] is None else str(row["dense_rank"] + 1)
        b = "-" if row["lexical_rank"] is None else str(row["lexical_rank"] + 1)
        mark = "*" if row["chunk_id"] in chosen else " "
        head = (f"{n:>2}{mark} {row['score']:.4f} (was {row['score_before']:.4f}) d{d}/b{b} "
                f"{row['class']}  {row['path']}:{row['start_line']}-{row['end_line']}")
        _wrap(con, head, "      ")
        _wrap(con, f"{row['symbol'] or row['kind']}: {'; '.join(row['why'])}", "      ")
    if len(trace.rows) > limit:
        con.print(f"  ... {len(trace.rows) - limit} more", markup=False, highlight=False)
    if trace.expansions:
        con.print("structural expansions:", markup=False, highlight=False)
        for e in trace.expansions:
            _wrap(con, f"{e['chunk_id']} ({e['relation']} of {e['seed']})", "    ", "  - ")
    else:
        con.print("structural expansions: none", markup=False, highlight=False)
    if trace.filtered:
        con.print("filtered from the final context:", markup=False, highlight=False)
        for f in trace.filtered:
            _wrap(con, f"{f['chunk_id']}: {f['reason']}", "    ", "  - ")
    else:
        con.print("filtered from the final context: none", markup=False, highlight=False)
    for note in trace.notes:
        _wrap(con, note, "    ", "  - ")
