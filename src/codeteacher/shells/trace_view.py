"""`ask --explain`: the retrieval trace as tables, for people tuning settings."""
from __future__ import annotations

from rich.table import Table


def render_trace(con, trace, result, limit: int = 25) -> None:
    qa = trace.analysis
    if qa is not None:
        con.print(f"query: intent={qa.intent or '-'} profile={qa.profile or '-'} "
                  f"wanted={qa.wanted} files={qa.files} symbols={dict(qa.symbols)} "
                  f"modules={qa.modules}", markup=False)
    chosen = {e.chunk_id for e in result.evidence}
    t = Table(title="candidates, best first (* = in the evidence)")
    for col in ("#", "before", "after", "dense", "bm25", "class", "path:lines", "symbol", "why"):
        t.add_column(col, overflow="fold")
    for n, row in enumerate(trace.rows[:limit], 1):
        t.add_row(f"{n}{'*' if row['chunk_id'] in chosen else ''}",
                  f"{row['score_before']:.4f}", f"{row['score']:.4f}",
                  "" if row["dense_rank"] is None else str(row["dense_rank"] + 1),
                  "" if row["lexical_rank"] is None else str(row["lexical_rank"] + 1),
                  row["class"], f"{row['path']}:{row['start_line']}-{row['end_line']}",
                  row["symbol"], "; ".join(row["why"]))
    con.print(t)
    if not trace.expansions:
        con.print("structural expansions: none", markup=False)
    else:
        t = Table(title="structural expansions")
        for col in ("chunk", "relation", "seed"):
            t.add_column(col, overflow="fold")
        for e in trace.expansions:
            t.add_row(e["chunk_id"], e["relation"], e["seed"])
        con.print(t)
    if not trace.filtered:
        con.print("filtered from the final context: none", markup=False)
    else:
        t = Table(title="filtered from the final context")
        t.add_column("chunk", overflow="fold")
        t.add_column("reason", overflow="fold")
        for f in trace.filtered:
            t.add_row(f["chunk_id"], f["reason"])
        con.print(t)
    for note in trace.notes:
        con.print(f"- {note}", markup=False)
