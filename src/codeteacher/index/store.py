"""Loading a built index: records, vectors (FAISS), BM25, the structure graph and lookups."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path, PurePosixPath

import numpy as np

from ..contracts.errors import UserError
from ..contracts.jsonio import read_jsonl, read_model
from ..contracts.models import Chunk, Manifest, ProjectStructure
from . import layout as st
from .files import RefusedFile, read_repo_file
from .layout import CHUNKER_VERSION, file_node
from .lexical import LexicalIndex


def _recover(path: Path) -> Path:
    """If a swap was interrupted between its two renames, the old index is still there."""
    if (path / st.MANIFEST).is_file() or path.exists():
        return path
    olds = sorted(path.parent.glob(f".{path.name}.old-*"))
    return olds[-1] if olds else path


class IndexStore:
    def __init__(self, path: str | Path):
        path = _recover(Path(path).expanduser())
        if not path.is_dir():
            raise UserError(f"no index at {path} (build one with: codeteacher index REPO --out {path})")
        if not (path / st.MANIFEST).is_file():
            raise UserError(f"{path} is not a codeteacher index (no {st.MANIFEST})")
        for name in (st.MANIFEST, st.RECORDS, st.FAISS, st.VECTORS, st.STRUCTURE):
            f = path / name
            if f.exists() and not f.is_file():  # a FIFO or device here would block the load
                raise UserError(f"corrupt index {path}: {name} is not a regular file")
        self.path = path
        self.manifest = read_model(path / st.MANIFEST, Manifest)
        if self.manifest.chunker_version != CHUNKER_VERSION:
            raise UserError(f"index {path} was built by another version "
                            f"({self.manifest.chunker_version}); rebuild it")
        self.records: list[Chunk] = read_jsonl(path / st.RECORDS, Chunk)
        try:
            import faiss

            self.faiss = faiss.read_index(str(path / st.FAISS))
            self.vectors = np.load(path / st.VECTORS, mmap_mode="r")
            self.lexical = LexicalIndex.load(path / st.BM25)
        except (RuntimeError, OSError, ValueError) as exc:
            raise UserError(f"corrupt index {path}: {str(exc).splitlines()[0][:120]}") from None
        if self.faiss.ntotal != len(self.records) or len(self.vectors) != len(self.records):
            raise UserError(f"corrupt index {path}: vectors and records disagree; rebuild it")
        self.structure = read_model(path / st.STRUCTURE, ProjectStructure)
        self.root = Path(self.manifest.root)
        self._build_lookups()

    def _build_lookups(self) -> None:
        self._memos: dict[str, dict] = {}
        self.by_id = {r.id: i for i, r in enumerate(self.records)}
        self.by_path: dict[str, list[int]] = defaultdict(list)
        self.by_basename: dict[str, list[str]] = defaultdict(list)
        self.by_stem: dict[str, list[str]] = defaultdict(list)
        self.by_symbol: dict[str, list[int]] = defaultdict(list)
        self.by_symbol_lower: dict[str, list[int]] = defaultdict(list)
        self.modules: dict[str, int] = {}
        for i, r in enumerate(self.records):
            if r.kind == "module":
                self.modules[r.path] = i
                continue
            self.by_path[r.path].append(i)
            if r.kind in ("file", "module", "call_chain", "doc_section", "build"):
                continue
            for key in {r.name, r.qualified_name}:
                if key:
                    self.by_symbol[key].append(i)
                    self.by_symbol_lower[key.lower()].append(i)
        for p in self.manifest.files:
            pp = PurePosixPath(p)
            self.by_basename[pp.name].append(p)
            self.by_basename[pp.name.lower()].append(p) if pp.name.lower() != pp.name else None
            self.by_stem[pp.stem.lower()].append(p)
        self.edges_out: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.edges_in: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for e in self.structure.edges:
            self.edges_out[e.source].append((e.type, e.target))
            self.edges_in[e.target].append((e.type, e.source))

    def record(self, i: int) -> Chunk:
        return self.records[i]

    def file_record_index(self, path: str) -> int | None:
        return self.by_id.get(file_node(path))

    def memo(self, name: str) -> dict:
        """A per-index dict for facts derived from the records at query time (a file's
        members, a record's tokens, a port family's plainest file): each is computed on first
        use and then reused by every later query of this loaded index."""
        return self._memos.setdefault(name, {})

    def members(self, path: str) -> list[int]:
        """Records of one file other than its file entity (the whole-file channel asks for the
        same files query after query)."""
        cache = self.memo("members")
        if path not in cache:
            cache[path] = [i for i in self.by_path.get(path, []) if self.records[i].kind != "file"]
        return cache[path]

    def repo_text(self, path: str, max_bytes: int | None = None) -> str | None:
        """A repository file's text as it is now, read through `read_repo_file` (no FIFO,
        escaping link or oversized file is read); None when it is gone or refused."""
        try:
            return read_repo_file(self.root, path, max_bytes).decode("utf-8", "replace")
        except (OSError, RefusedFile):  # missing or unreadable; refused
            return None
