"""Code-to-paper links of an index directory: `build_paper_links` (the pipeline stage writing
paper_links.json), `links_for` (papers for an answer's evidence) and `link_target` (papers for a
file or symbol). The scoring itself lives in `scoring.py` (Linker, CitationMap)."""
from __future__ import annotations

import json
import sqlite3
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
from ..index.layout import LINKS_FILE, RECORDS, VECTOR_KEYS, VECTORS, embed_text, vector_key
from . import state as S
from . import vectors as PV
from .citations import Citation, RecordIndex, citations_from_cff, citations_in_chunks, resolve
from .library import Library
from .model import PaperRecord
from .scoring import CitationMap, Linker

__all__ = ["CitationMap", "Linker", "PaperLinksReport", "build_paper_links", "links_for",
           "link_target", "load_links", "read_records"]

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


def _vector_files(index_dir: Path, records: list[Chunk]) -> tuple | None:
    """(vector keys, vectors (memory-mapped), row of each chunk id), or None if unreadable."""
    try:
        keys = json.loads((index_dir / VECTOR_KEYS).read_text(encoding="utf-8"))
        vecs = np.load(index_dir / VECTORS, mmap_mode="r")
    except (OSError, ValueError):
        return None
    if not (len(keys) == len(vecs) == len(records)):
        return None
    return keys, vecs, {r.id: i for i, r in enumerate(records)}


def index_vectors(index_dir: Path, records: list[Chunk], settings,
                  only: set[str] | None = None, files: tuple | None = None
                  ) -> dict[str, np.ndarray]:
    """The index's own record embeddings (of the chunks in `only`, default all), each checked
    against the configured model and the chunk's embedded text (vector_keys.json hashes
    model + text; kinds the index does not embed have an empty key). A chunk without a vector
    of its own takes its whole's (a split part is about what its function is about). Any
    mismatch means {} (embed anew)."""
    files = files or _vector_files(index_dir, records)
    if files is None:
        return {}
    keys, vecs, row = files
    es = settings.embedding
    model_key = embed_model_id(es)
    wanted = records if only is None else [records[row[i]] for i in only if i in row]
    wanted += [records[row[r.parent_id]] for r in wanted
               if r.parent_id in row and not keys[row[r.id]]]
    out = {}
    for r in wanted:
        i = row[r.id]
        if not keys[i] or r.id in out:
            continue
        text = embed_text(r, es.max_code_chars)
        if vector_key(model_key, text) != keys[i]:
            return {}
        out[r.id] = np.asarray(vecs[i], dtype=np.float32)
    for r in wanted:
        if r.id not in out and r.parent_id in out:
            out[r.id] = out[r.parent_id]
    return out


def gather_citations(records: list[Chunk], index: RecordIndex, root: Path | None,
                     extracted: list[Citation] | None = None) -> tuple[list[Citation], list[str]]:
    """Citations written in `records` (and the repository's CITATION.cff), resolved.
    `extracted`: those of `records` already found (fresh copies: resolving fills them in)."""
    cites = extracted if extracted is not None else citations_in_chunks(records)
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


# ---- what linking needs, computed once per library / index state and kept per process ---------

_LINKERS: dict[tuple, Linker] = {}
_INDEXES: dict[tuple, "IndexState"] = {}


def _stamp(path: Path) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


def open_linker(library_path: str | Path, settings, embedder=None,
                progress: bool = False) -> Linker:
    """A Linker over the library, reusing this process's one while the library file is
    unchanged. What it needs per paper is prepared once per library change and stored in the
    library (see `prepare`); a call then reads records only for candidate papers."""
    from ..embedding import model_id

    path = Path(library_path)
    model = model_id(settings.embedding)
    if path.exists():
        key = (_stamp(path), model, settings.papers.model_dump_json())
        if (linker := _LINKERS.get(key)) is not None:
            return linker
    with Library.open(path, snapshot=settings.papers.snapshot) as lib:
        state, pv, _ = prepare(lib, settings, embedder, progress)
    # a read-only connection of its own: the linker may be used from other threads (MCP)
    fts = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                          check_same_thread=False)
    linker = Linker(None, settings, embedder=embedder, vectors=pv, fts=fts, state=state)
    key = (_stamp(path), model, settings.papers.model_dump_json())
    for old in [k for k in _LINKERS if k[0][0] == key[0][0]]:
        _LINKERS.pop(old).fts.close()
    _LINKERS[key] = linker
    return linker


def prepare(lib: Library, settings, embedder=None, progress: bool = False):
    """The library's link state and paper vectors (with their ANN index), computed and stored
    only if the library changed since they were last stored: vectors are embedded only for
    records whose text is new. A library that cannot be written gets them in memory only.
    Returns (LibraryState, PaperVectors | None, records embedded now)."""
    from ..embedding import model_id

    conn, ps = lib.conn, settings.papers
    model = model_id(settings.embedding)
    state = S.load_state(conn)
    current = S.vectors_current(conn, model)
    embedded = 0
    if state is None or not current:
        papers = lib.all()
        if state is None:
            state = S.LibraryState.compute(papers, S.generation(conn))
            try:
                S.store_state(conn, state)
            except sqlite3.OperationalError:
                pass  # read-only: recomputed by every process
        if not current:
            embedded = refresh_vectors(lib, papers, settings, embedder, progress).embedded
    pv = PV.load(conn, state.keys, model, str(state.generation))
    if pv is not None:
        PV.attach_ann(pv, lib.path, ps.ann_min_papers, ps.ann_hnsw_m, ps.ann_ef_construction,
                      ps.ann_ef_search)
    return state, pv, embedded


def refresh_vectors(lib: Library, papers: list[PaperRecord], settings, embedder=None,
                    progress: bool = False) -> PV.RefreshReport:
    """Embed and store the vectors the library lacks for the configured model (only those)."""
    from ..embedding import load_embedder, model_id
    from ..contracts.progress import progress_bar

    model = model_id(settings.embedding)
    want = {p.key: PV.text_hash(PV.paper_text(p)) for p in papers}
    try:
        have = PV.stored_hashes(lib.conn, model)
    except sqlite3.OperationalError:  # read-only library: nothing can be stored
        return PV.RefreshReport()
    missing = sum(1 for k, h in want.items() if have.get(k) != h)
    state = {"embedder": embedder}

    def embed(texts):
        if state["embedder"] is None:
            state["embedder"] = load_embedder(settings.embedding)
        return state["embedder"].embed(texts)

    with progress_bar("papers", missing, progress) as advance:
        try:
            report = PV.refresh(lib.conn, papers, model, embed, advance)
            S.mark_vectors(lib.conn, model)
            return report
        except sqlite3.OperationalError:
            return PV.RefreshReport()


TERMS_FILE = "paper_terms.json"
DERIVED_VERSION = 1  # bump when what paper_terms.json holds changes


class IndexState:
    """An index's records and what linking derives from them alone."""

    def __init__(self, index_dir: Path, settings):
        from .citations import is_repo_level

        self.dir = index_dir
        self.records = read_records(index_dir)
        self.by_id = {r.id: r for r in self.records}
        self.related = related_ids(self.records)
        kinds = set(settings.papers.link_kinds)
        self.corpus = [r for r in self.records if r.kind in kinds]
        self.by_path: dict[str, list[Chunk]] = defaultdict(list)
        for r in self.records:
            self.by_path[r.path].append(r)
        self.repo_level = [r for p, rs in self.by_path.items() if is_repo_level(p) for r in rs]
        self._df: tuple | None = None
        self.root = _repo_root(index_dir)
        self._cites: dict[str, list[Citation]] = {}
        self.terms: dict = {}
        self._vectors: tuple | None = None
        self.settings = settings

    def _derived(self) -> None:
        """The concept terms of every linkable chunk, their document frequencies, and the
        citations written in every chunk: library-independent, so computed once per index and
        kept in it as paper_terms.json (tagged with the records file's size and time)."""
        from collections import Counter

        from .scoring import chunk_terms, corpus_term_df

        st = (self.dir / "records.jsonl").stat()
        tag = f"{DERIVED_VERSION}:{st.st_size}:{st.st_mtime_ns}:{len(self.corpus)}"
        path = self.dir / TERMS_FILE
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if doc.get("records") == tag:
                self.terms = {k: Counter(v) for k, v in doc["terms"].items()}
                self._df = (int(doc["n"]), Counter(doc["df"]))
                cites = [Citation.model_validate(c) for c in doc["citations"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self._df = None
        if self._df is None:
            self.terms = {c.id: chunk_terms(c) for c in self.corpus}
            self._df = corpus_term_df(self.corpus, self.terms)
            cites = citations_in_chunks(self.records)
            try:
                write_text(path, json.dumps({
                    "records": tag, "n": self._df[0], "df": self._df[1], "terms": self.terms,
                    "citations": [c.model_dump(mode="json", exclude_defaults=True)
                                  for c in cites]}, separators=(",", ":")))
            except OSError:
                pass  # a read-only index: computed again by the next process
        self._cites = defaultdict(list)
        for c in cites:
            self._cites[c.chunk_id].append(c)

    @property
    def corpus_df(self) -> tuple:
        if self._df is None:
            self._derived()
        return self._df

    def citation_scope(self, targets: list[Chunk]) -> list[Chunk]:
        """The chunks whose citations can count for `targets`: their own and related chunks,
        their files, and the repository-level README / CITATION files."""
        ids = {t.id for t in targets}
        for t in targets:
            ids |= self.related.get(t.id, set())
        scope = {r.id: r for t in targets for r in self.by_path.get(t.path, [])}
        scope.update((r.id, r) for r in self.repo_level)
        scope.update((i, self.by_id[i]) for i in ids if i in self.by_id)
        return list(scope.values())

    def extracted(self, chunks: list[Chunk]) -> list[Citation]:
        """The citations written in `chunks`, as fresh copies (resolving fills them in)."""
        if self._df is None:
            self._derived()
        return [x.model_copy() for c in chunks for x in self._cites.get(c.id, [])]

    def vectors(self, ids: set[str]) -> dict[str, np.ndarray]:
        """index_vectors for `ids`, with the index's vector files read once."""
        if self._vectors is None:
            self._vectors = _vector_files(self.dir, self.records)
        return index_vectors(self.dir, self.records, self.settings, only=ids,
                             files=self._vectors)


def index_state(index_dir: str | Path, settings) -> IndexState:
    index_dir = Path(index_dir)
    path = index_dir / "records.jsonl"
    if not path.is_file():
        raise UserError(f"{index_dir}: no records.jsonl (build the index first)")
    key = (_stamp(path), settings.papers.model_dump_json())
    if (st := _INDEXES.get(key)) is None:
        for old in [k for k in _INDEXES if k[0][0] == key[0][0]]:
            del _INDEXES[old]
        st = _INDEXES[key] = IndexState(index_dir, settings)
    return st


def build_paper_links(index_dir: str | Path, library_path: str | Path | None = None,
                      settings=None, progress: bool = False) -> PaperLinksReport:
    """Pipeline entry point: read records.jsonl, write paper_links.json (atomically)."""
    from ..embedding import model_id
    from ..contracts.progress import progress_bar
    from ..contracts.settings import Settings

    t0 = time.perf_counter()
    settings = settings or Settings()
    index_dir = Path(index_dir)
    library_path = Path(library_path or settings.papers.library)
    state = index_state(index_dir, settings)
    records = state.records
    linker = open_linker(library_path, settings, progress=progress)
    n_papers = len(linker.keys)
    with Library.open(library_path, snapshot=False) as lib:
        fingerprint = lib.fingerprint()
    cites, problems = gather_citations(records, linker.index, state.root,
                                       state.extracted(records))
    entities = state.corpus
    with progress_bar("link", len(entities), progress) as advance:
        links = linker.link(entities, CitationMap.build(cites), state.related,
                            vectors=index_vectors(index_dir, records, settings),
                            corpus_df=state.corpus_df, terms=state.terms, progress=advance)
    by_id = state.by_id
    doc = {
        "schema_version": LINKS_SCHEMA,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "library": str(library_path), "library_fingerprint": fingerprint,
        "model_id": model_id(settings.embedding) if entities and n_papers else "",
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
        links=sum(len(v) for v in links.values()), papers_in_library=n_papers,
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
    # papers the code cites first, then by score (stable: ties keep rank order)
    return sorted(best.values(), key=lambda l: (l.signal != "citation", -l.score))[:k]


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
    is named; otherwise scores the target's entities live against `library` (with the
    library's stored vectors and this process's cached state, so repeated calls are cheap)."""
    from ..contracts.settings import Settings

    settings = settings or Settings()
    index_dir = Path(index_dir)
    state = index_state(index_dir, settings)
    targets = find_target(state.records, path_or_symbol)
    if not targets:
        raise UserError(f"no file or symbol '{path_or_symbol}' in the index at {index_dir}")
    doc = load_links(index_dir)
    if doc is not None and library is None:
        return links_for(index_dir, chunk_ids=[t.id for t in targets], k=k)
    linker = open_linker(library or settings.papers.library, settings)
    scope = state.citation_scope(targets)
    cites, _ = gather_citations(scope, linker.index, state.root, state.extracted(scope))
    kinds = set(settings.papers.link_kinds)
    ents = [t for t in targets if t.kind in kinds] or targets
    links = linker.link(ents, CitationMap.build(cites), state.related, corpus_df=state.corpus_df,
                        terms=state.terms, vectors=state.vectors({e.id for e in ents}))
    return merge_links(list(links.values()), k)
