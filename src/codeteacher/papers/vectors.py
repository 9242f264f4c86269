"""Paper vectors and the ANN index over them, computed once per library change, never per call.

Vectors live in the library file itself, table `paper_vectors`: one row per record and
embedding model, keyed by the hash of the text that was embedded (title, keywords, abstract), so
an import embeds only records that are new or whose text changed, and a different model never
reads another model's vectors. Past `papers.ann_min_papers` records a FAISS HNSW index over the
vectors is kept beside the library (`<library>.ann-<digest>.faiss`); the digest covers the model
and every (key, hash) pair, so a stale index is never read, only replaced.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .model import PaperRecord

VECTORS_TABLE = """CREATE TABLE IF NOT EXISTS paper_vectors(
    model TEXT NOT NULL, key TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY(model, key))"""
_BATCH = 256  # records embedded (and committed) per step: progress moves, memory stays flat


def paper_text(p: PaperRecord) -> str:
    """What is embedded for a paper: its own words about its content."""
    return f"{p.title}. {', '.join(p.keywords)}. {p.abstract}"


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


@dataclass
class PaperVectors:
    """Unit vectors of the library's papers, row i = `keys[i]` (the library's key order)."""

    model_id: str
    keys: list[str]
    vecs: np.ndarray
    digest: str
    ann: object | None = None  # faiss.Index over `vecs` (inner product), when built
    ef_search: int = 64

    def __post_init__(self):
        self.mean = (self.vecs.mean(axis=0) if len(self.vecs)
                     else np.zeros(self.vecs.shape[1], np.float32))

    def nearest(self, q: np.ndarray, k: int) -> list[int]:
        """Rows of the k papers most similar to `q` (approximate past the ANN threshold)."""
        k = min(k, len(self.keys))
        if k <= 0:
            return []
        if self.ann is not None:
            _, ids = self.ann.search(np.ascontiguousarray(q.reshape(1, -1), np.float32), k)
            return [int(i) for i in ids[0] if i >= 0]
        sims = self.vecs @ q
        top = np.argpartition(-sims, k - 1)[:k]
        return [int(i) for i in top[np.argsort(-sims[top], kind="stable")]]

    def similarity(self, q: np.ndarray, rows: list[int]) -> np.ndarray:
        return self.vecs[rows] @ q if rows else np.zeros(0, np.float32)

    def mean_similarity(self, q: np.ndarray) -> float:
        """Mean cosine of `q` to all papers, exactly, without touching every row."""
        return float(self.mean @ q)


@dataclass
class RefreshReport:
    embedded: int = 0
    removed: int = 0
    ann_built: bool = False


def stored_hashes(conn: sqlite3.Connection, model: str) -> dict[str, str]:
    conn.execute(VECTORS_TABLE)
    return dict(conn.execute("SELECT key, hash FROM paper_vectors WHERE model = ?", (model,)))


def refresh(conn: sqlite3.Connection, papers: list[PaperRecord], model: str, embed,
            progress=None) -> RefreshReport:
    """Bring the stored vectors of `model` in line with `papers`: embed records without a vector
    for their current text (in batches, each committed), delete vectors of records that are gone.
    `embed(texts) -> array` is called only when something is missing; `progress(n)` advances."""
    report = RefreshReport()
    have = stored_hashes(conn, model)
    want = {p.key: text_hash(paper_text(p)) for p in papers}
    todo = [p for p in papers if have.get(p.key) != want[p.key]]
    gone = [k for k in have if k not in want]
    if gone:
        with conn:
            conn.executemany("DELETE FROM paper_vectors WHERE model = ? AND key = ?",
                             [(model, k) for k in gone])
        report.removed = len(gone)
    for s in range(0, len(todo), _BATCH):
        batch = todo[s: s + _BATCH]
        vecs = np.asarray(embed([paper_text(p) for p in batch]), dtype=np.float32)
        with conn:
            conn.executemany("INSERT OR REPLACE INTO paper_vectors VALUES (?, ?, ?, ?)",
                             [(model, p.key, want[p.key], v.tobytes()) for p, v in zip(batch, vecs)])
        report.embedded += len(batch)
        if progress:
            progress(len(batch))
    return report


def load(conn: sqlite3.Connection, keys: list[str], model: str, tag: str) -> PaperVectors | None:
    """The stored vectors of `model` in the order of `keys`, or None when any is missing.
    `tag` names this state of the library (it names the ANN file)."""
    try:
        rows = dict(conn.execute("SELECT key, vec FROM paper_vectors WHERE model = ?", (model,)))
    except sqlite3.OperationalError:  # never written (a read-only library)
        return None
    if not keys or any(k not in rows for k in keys):
        return None
    vecs = np.frombuffer(b"".join(rows[k] for k in keys), dtype=np.float32)
    digest = hashlib.sha1(f"{model}\0{tag}\0{len(keys)}".encode()).hexdigest()[:16]
    return PaperVectors(model, list(keys), vecs.reshape(len(keys), -1), digest)


def in_memory(papers: list[PaperRecord], model: str, embed) -> PaperVectors:
    """Vectors embedded now and kept only in this process (a library that cannot be written)."""
    vecs = np.asarray(embed([paper_text(p) for p in papers]), dtype=np.float32)
    h = hashlib.sha1(model.encode())
    for p in papers:
        h.update(f"\0{p.key}\0{text_hash(paper_text(p))}".encode("utf-8", "replace"))
    return PaperVectors(model, [p.key for p in papers], vecs, h.hexdigest()[:16])


# ---- the ANN index beside the library ---------------------------------------------------------

def ann_path(library: Path, digest: str) -> Path:
    return library.with_name(f"{library.name}.ann-{digest}.faiss")


def attach_ann(pv: PaperVectors, library: Path | None, min_papers: int, hnsw_m: int,
               ef_construction: int, ef_search: int) -> bool:
    """Read the library's ANN index for these vectors, or build (and store) it. Returns whether
    it was built now. Below `min_papers` exact search is as fast and nothing is attached."""
    if len(pv.keys) < min_papers:
        return False
    import faiss

    pv.ef_search = ef_search
    path = ann_path(library, pv.digest) if library else None
    if path and path.is_file():
        try:
            index = faiss.read_index(str(path))
            if index.ntotal == len(pv.keys) and index.d == pv.vecs.shape[1]:
                index.hnsw.efSearch = ef_search
                pv.ann = index
                return False
        except RuntimeError:
            pass  # unreadable: rebuilt below
    index = faiss.IndexHNSWFlat(pv.vecs.shape[1], hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef_construction
    index.add(np.ascontiguousarray(pv.vecs))
    index.hnsw.efSearch = ef_search
    pv.ann = index
    if path:
        _write_ann(index, path)
    return True


def _write_ann(index, path: Path) -> None:
    """Atomically, then drop indexes of earlier library states (never read again)."""
    import faiss

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError:
        return  # a read-only place: the index lives in this process only
    os.close(fd)
    try:
        faiss.write_index(index, tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError):
        Path(tmp).unlink(missing_ok=True)
        return
    for old in path.parent.glob(f"{path.name.split('.ann-')[0]}.ann-*.faiss"):
        if old != path:
            old.unlink(missing_ok=True)
