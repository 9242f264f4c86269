"""Parsers: tree-sitter C/C++/CUDA (cpp) and Fortran (fortran) chunks, and doc, build and
script texts (text)."""
from __future__ import annotations

from typing import Callable

from ...contracts.errors import describe
from ...contracts.models import ParsedFile


def parse_guarded(path: str, make: Callable) -> ParsedFile:
    """Run one file's parser (`make()` builds it, `.run()` parses) so that it never raises: a
    failure keeps the chunks made before it and is counted in ParsedFile.failures."""
    fp = None
    try:
        fp = make()
        return fp.run()
    except Exception as exc:  # noqa: BLE001 - a parser must never take the pipeline down
        if fp is None:
            return ParsedFile(path=path, chunks=[], failures=1, failure=describe(exc))
        fp.fail(exc)
        return ParsedFile(path=path, chunks=fp.chunks, failures=fp.failures, failure=fp.failure)
