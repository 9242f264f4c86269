"""Parsers: tree-sitter C/C++/CUDA (cpp) and Fortran (fortran) chunks, and doc, build and
script texts (text)."""
from __future__ import annotations

from typing import Callable

from ...contracts.errors import describe
from ...contracts.models import Chunk, ParsedFile
from ...contracts.settings import ChunkSettings
from ...index.layout import ChunkIds


class ChunkWriter:
    """What the code parsers share: the file's fields, its lines, its chunks with their ids,
    the failure count with `fail`, and `add`, which makes one chunk of lines start..end
    (1-based)."""

    def __init__(self, path: str, text: str, language: str, scope: str, file_sha: str,
                 settings: ChunkSettings | None):
        self.path, self.language, self.scope, self.file_sha = path, language, scope, file_sha
        self.settings = settings or ChunkSettings()
        self.lines = text.split("\n")
        self.ids = ChunkIds(path)
        self.chunks: list[Chunk] = []
        self.failures, self.failure = 0, ""

    def fail(self, exc: Exception, node=None) -> None:
        """Count a construct lost to a parser failure; the first one is kept for the report."""
        self.failures += 1
        if not self.failure:
            where = f"line {node.start_point.row + 1}: " if node is not None else ""
            self.failure = where + describe(exc)

    def add(self, kind, start, end, **fields) -> Chunk | None:
        text = "\n".join(self.lines[start - 1: end])
        if len(text.strip()) < self.settings.min_chunk_chars:
            return None
        cid = self.ids.new(kind, str(fields.get("qualified_name") or fields.get("name")), start)
        chunk = Chunk(id=cid, path=self.path, kind=kind, start_line=start, end_line=end,
                      text=text, language=self.language, scope=self.scope,
                      file_sha=self.file_sha, **fields)
        self.chunks.append(chunk)
        return chunk


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
