"""`ask --explain`: the retrieval trace as tables, for people tuning settings."""
from __future__ import annotations

from rich.table import Table


def render_trace(con, trace, result, limit: int = 25) -> None:
    qa = trace.analysis
    if qa is not None:
        con.print(f"[bold]query:[/bold] files={qa.files} symbols={dict(qa.symbols)} "
                  f"modules={qa.modules} intent={getattr(qa, 'intent', '') or '-'}", markup=True)
    t = Table(title="candidates (best first)")
    for col in ("#", "score", "dense", "bm25", "path:lines", "symbol", "why"):
        t.add_column(col)
    chosen = {e.chunk_id for e in result.evidence}
    for n, c in enumerate(trace.candidates[:limit], 1):
        t.add_row(f"{n}{'*' if c.chunk_id in chosen else ''}", f"{c.score:.4f}",
                  "" if c.dense_rank is None else str(c.dense_rank + 1),
                  "" if c.lexical_rank is None else str(c.lexical_rank + 1),
                  f"{c.path}:{c.start_line}-{c.end_line}", c.symbol, "; ".join(c.why))
    con.print(t)
    for note in trace.notes:
        con.print(f"- {note}", markup=False)
