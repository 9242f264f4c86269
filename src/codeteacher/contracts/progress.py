"""Progress bars for long stages (rich on stderr), silent when not asked for."""
from __future__ import annotations

import sys
from contextlib import contextmanager


@contextmanager
def progress_bar(label: str, total: int, enabled: bool):
    if not enabled or total == 0:
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(file=sys.stderr)
    with Progress(TextColumn(f"[bold]{label:<9}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as prog:
        task = prog.add_task(label, total=total)
        yield lambda n=1: prog.advance(task, n)
