"""Code-to-paper links of an index directory: `build_paper_links` (the pipeline stage writing
paper_links.json), `links_for` (papers for an answer's evidence) and `link_target` (papers for a
file or symbol). The scoring itself lives in `scoring.py` (Linker, CitationMap)."""
from __future__ import annotations

import json
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from ..contracts.errors import UserError
from ..contracts.jsonio import read_jsonl, write_text
from ..contracts.models import Chunk, PaperLink
from ..embedding import model_id as embed_model_id
from ..index.layout import RECORDS, VECTOR_KEYS, VECTORS, embed_text, vector_key
from .citations import (
    Citation,
    RecordIndex,
    citations_from_cff,
    citations_in_chunks,
    resolve,
)
from .library import Library
from .model import PaperRecord
from .scoring import CitationMap, Linker

__all__ = ["CitationMap", "Linker", "PaperLinksReport", "build_paper_links", "links_for",
           "link_target", "load_links", "read_records"]

LINKS_FILE = "paper_links.json"
LINKS_SCHEMA = 1


class PaperLinksReport(BaseModel):
    output: str
    entities_considered: int
    entities_linked: int
    links: int
    papers_in_library: int
    citations_found: int
    citations_resolved: int
    unresolved_citations: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    seconds: float = 0.0


# ---- index-directory entry points -------------------------------------------------------------

def read_records(index_dir: Path) -> list[Chunk]:
    path = Path(index_dir) / RECORDS
    if not path.is_file():
        raise UserError(f"{index_dir}: no {RECORDS} (build the index first)")
    return read_jsonl(path, Chunk)


def _repo_root(index_dir: Path) -> Path | None:
    for name in ("manifest.json", "files.json"):
        p = index_dir / name
        if p.is_file():
            try:
                root = json.loads(p.read_text(encoding="utf-8")).get("root")
            except (json.JSONDecodeError, AttributeError):
                continue
            if root and Path(root).is_dir():
                return Path(root)
    return None


def index_vectors(index_dir: Path, records: list[Chunk], settings) -> dict[str, np.ndarray]:
    """The index's own record embeddings, if they verifiably belong to these records under the
    configured model (vector_keys.json hashes model + embedded text); else {} (embed anew)."""
    try:
        keys = json.loads((index_dir / VECTOR_KEYS).read_text(encoding="utf-8"))
        vecs = np.load(index_dir / VECTORS, mmap_mode="r")
    except (OSError, ValueError):
        return {}  # no usable vectors: embed anew
    es = settings.embedding
    model_key = embed_model_id(es)
    if not (len(keys) == len(vecs) == len(records)):
        return {}
    for r, k in zip(records, keys):
        if k and vector_key(model_key, embed_text(r, es.max_code_chars)) != k:
            return {}
    # records of skipped kinds (key "") have no vector in the index: the linker embeds them
    return {r.id: np.asarray(vecs[i], dtype=np.float32) for i, (r, k) in
            enumerate(zip(records, keys)) if k}


def gather_citations(records: list[Chunk], index: RecordIndex,
                     root: Path | None) -> tuple[list[Citation], list[str]]:
    cites = citations_in_chunks(records)
    problems: list[str] = []
    if root and (root / "CITATION.cff").is_file():
        cff, problems = citations_from_cff((root / "CITATION.cff").read_text(encoding="utf-8",
                                                                              errors="replace"))
        cites += cff
    context = {r.id: f"{r.comment}\n{r.text}" for r in records}
    return resolve(cites, index, context), problems


def related_ids(records: list[Chunk]) -> dict[str, set[str]]:
    """Chunks that are one entity in the reader's eyes: a declaration and its definition
    (same qualified name and kind family), a split function and its parts."""
    by_qn: dict[str, set[str]] = defaultdict(set)
    rel: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if r.qualified_name and r.kind not in ("file", "module", "call_chain", "doc_section"):
            by_qn[r.qualified_name].add(r.id)
        if r.parent_id:
            rel[r.id].add(r.parent_id)
            rel[r.parent_id].add(r.id)
    for ids in by_qn.values():
        if 1 < len(ids) <= 8:  # overloads beyond a handful are different functions
            for i in ids:
                rel[i] |= ids - {i}
    return rel


def load_library_records(library_path: str | Path, settings) -> tuple[list[PaperRecord], str]:
    with Library.open(library_path, snapshot=settings.papers.snapshot) as lib:
        return lib.all(), lib.fingerprint()


def build_paper_links(index_dir: str | Path, library_path: str | Path | None = None,
                      settings=None) -> PaperLinksReport:
    """Pipeline entry point: read records.jsonl, write paper_links.json (atomically)."""
    from ..contracts.settings import Settings

    t0 = time.perf_counter()
    settings = settings or Settings()
    index_dir = Path(index_dir)
    library_path = Path(library_path or settings.papers.library)
    records = read_records(index_dir)
    papers, fingerprint = load_library_records(library_path, settings)
    linker = Linker(papers, settings)
    cites, problems = gather_citations(records, linker.index, _repo_root(index_dir))
    kinds = set(settings.papers.link_kinds)
    entities = [r for r in records if r.kind in kinds]
    links = linker.link(entities, CitationMap.build(cites), related_ids(records),
                        vectors=index_vectors(index_dir, records, settings))
    by_id = {r.id: r for r in records}
    doc = {
        "schema_version": LINKS_SCHEMA,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "library": str(library_path), "library_fingerprint": fingerprint,
        "model_id": linker.embedder.model_id if entities and papers else "",
        "min_score": settings.papers.min_score,
        "weights": settings.papers.weights.model_dump(),
        "entities": {eid: {"path": by_id[eid].path, "kind": by_id[eid].kind,
                           "name": by_id[eid].qualified_name or by_id[eid].name,
                           "start_line": by_id[eid].start_line, "end_line": by_id[eid].end_line,
                           "links": [l.model_dump(mode="json") for l in ls]}
                     for eid, ls in sorted(links.items())},
        "citations": [c.model_dump(mode="json", exclude_defaults=True) for c in cites],
    }
    out = index_dir / LINKS_FILE
    write_text(out, json.dumps(doc, indent=1, ensure_ascii=False))
    unresolved = sorted({f"{c.path}{f':{c.line}' if c.line else ''}: "
                         f"{' '.join(c.text.split())} ({c.resolution})"
                         for c in cites if not c.resolved})
    return PaperLinksReport(
        output=str(out), entities_considered=len(entities), entities_linked=len(links),
        links=sum(len(v) for v in links.values()), papers_in_library=len(papers),
        citations_found=len(cites), citations_resolved=sum(1 for c in cites if c.resolved),
        unresolved_citations=unresolved[:50], problems=problems,
        seconds=round(time.perf_counter() - t0, 2))


_LOADED: dict[str, tuple[int, dict]] = {}


def load_links(index_dir: str | Path) -> dict | None:
    """paper_links.json of an index, cached by modification time; None when absent."""
    path = Path(index_dir) / LINKS_FILE
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    cached = _LOADED.get(str(path))
    if cached and cached[0] == mtime:
        return cached[1]
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError(f"{path} is corrupt; rebuild it with 'codeteacher papers build'") from None
    if doc.get("schema_version") != LINKS_SCHEMA:
        raise UserError(f"{path}: unsupported schema; rebuild it with 'codeteacher papers build'")
    _LOADED[str(path)] = (mtime, doc)
    return doc


def merge_links(groups: list[list[PaperLink]], k: int) -> list[PaperLink]:
    """One link per paper: best score, its reasons, and every place it was attached to."""
    best: dict[str, PaperLink] = {}
    for links in groups:
        for l in links:
            cur = best.get(l.key)
            if cur is None:
                best[l.key] = l.model_copy(deep=True)
                continue
            attached = list(dict.fromkeys(cur.attached_to + l.attached_to))
            if l.score > cur.score:
                best[l.key] = l.model_copy(update={"attached_to": attached}, deep=True)
            else:
                cur.attached_to = attached
    return sorted(best.values(), key=lambda l: -l.score)[:k]  # stable: ties keep rank order


def links_for(index_dir: str | Path, chunk_ids: list[str] | None = None,
              paths: list[str] | None = None, k: int = 3,
              min_score: float | None = None) -> list[PaperLink]:
    """Papers for the evidence of an answer (by chunk id and/or file path). An index without
    paper_links.json simply has no papers: returns []."""
    doc = load_links(index_dir)
    if not doc:
        return []
    ids, wanted_paths = set(chunk_ids or []), set(paths or [])
    groups = []
    for eid, ent in doc["entities"].items():
        if eid in ids or ent["path"] in wanted_paths:
            attach = eid if eid in ids else ent["path"]
            groups.append([PaperLink.model_validate({**l, "attached_to": [attach]})
                           for l in ent["links"]
                           if min_score is None or l["score"] >= min_score])
    return merge_links(groups, k)


def find_target(records: list[Chunk], target: str) -> list[Chunk]:
    """Chunks of a file path (exact, or a unique path suffix) or of a symbol (name, qualified
    name, or qualified-name suffix)."""
    t = target.strip().lstrip("./")
    by_path = [r for r in records if r.path == t]
    if not by_path:
        suffix = sorted({r.path for r in records if r.path.endswith("/" + t)})
        if len(suffix) == 1:
            by_path = [r for r in records if r.path == suffix[0]]
    if by_path:
        return by_path
    sym = target.strip()
    return [r for r in records if r.kind not in ("file", "module", "call_chain")
            and (r.name == sym or r.qualified_name == sym or r.qualified_name.endswith("::" + sym))]


def link_target(index_dir: str | Path, path_or_symbol: str, library: str | Path | None = None,
                k: int = 5, settings=None) -> list[PaperLink]:
    """Papers for a file or symbol. Uses paper_links.json when present and no other library
    is named; otherwise scores the target's entities live against `library`."""
    from ..contracts.settings import Settings

    settings = settings or Settings()
    index_dir = Path(index_dir)
    records = read_records(index_dir)
    targets = find_target(records, path_or_symbol)
    if not targets:
        raise UserError(f"no file or symbol '{path_or_symbol}' in the index at {index_dir}")
    doc = load_links(index_dir)
    if doc is not None and library is None:
        return links_for(index_dir, chunk_ids=[t.id for t in targets], k=k)
    papers, _ = load_library_records(library or settings.papers.library, settings)
    linker = Linker(papers, settings)
    cites, _ = gather_citations(records, linker.index, _repo_root(index_dir))
    kinds = set(settings.papers.link_kinds)
    ents = [t for t in targets if t.kind in kinds] or targets
    links = linker.link(ents, CitationMap.build(cites), related_ids(records),
                        corpus=[r for r in records if r.kind in kinds],
                        vectors=index_vectors(index_dir, records, settings))
    return merge_links(list(links.values()), k)
