"""Progress bars for long stages (rich on stderr), silent when not asked for. The one home of
progress display: stages get `progress_bar`, multi-stage runs (eval) get `stage_progress`."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def _progress():
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn)

    return Progress(TextColumn("[bold]{task.description:<9}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=Console(file=sys.stderr), transient=False)


@contextmanager
def progress_bar(label: str, total: int, enabled: bool):
    """One bar; yields advance(n=1)."""
    if not enabled or total == 0:
        yield lambda n=1: None
        return
    with _progress() as prog:
        task = prog.add_task(label, total=total)
        yield lambda n=1: prog.advance(task, n)


@contextmanager
def stage_progress(enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """One bar per stage; yields report(stage, done, total), which adds a stage's bar the first
    time it is named. Nothing is drawn before the first report (an early error stays alone on
    stderr)."""
    if not enabled:
        yield lambda stage, done, total: None
        return
    state: dict = {"prog": None, "tasks": {}}

    def report(stage: str, done: int, total: int) -> None:
        if state["prog"] is None:
            state["prog"] = _progress()
            state["prog"].start()
        prog, tasks = state["prog"], state["tasks"]
        if stage not in tasks:
            tasks[stage] = prog.add_task(stage, total=total)
        prog.update(tasks[stage], completed=done, total=total)

    try:
        yield report
    finally:
        if state["prog"] is not None:
            state["prog"].stop()
