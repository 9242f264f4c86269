"""Linking code entities to papers, with a score and the reasons for it.

Candidates per entity come from embedding search (entity text + explanation against paper
title + keywords + abstract), FTS5 over the entity's concept terms, and explicit citations.
Each candidate gets a weighted sum of signals in [0, 1] (weights and their rationale live in
`PaperLinkWeights`); links under `min_score` are not kept.
"""
from __future__ import annotations

import json
import math
import sqlite3
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from ..errors import UserError
from ..models import Chunk, PaperLink
from . import terms as T
from .citations import Citation, RecordIndex, citations_from_cff, citations_in_chunks, resolve
from .config import PaperSettings
from .library import Library, atomic_write_text, fts_query
from .model import PaperRecord

LINKS_FILE = "paper_links.json"
LINKS_SCHEMA = 1
_PROSE_KINDS = {"doc_section", "file", "module", "call_chain"}


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


@dataclass
class CitationMap:
    """Resolved citations grouped by where they were written."""

    by_chunk: dict[str, dict[str, Citation]] = field(default_factory=lambda: defaultdict(dict))
    by_path: dict[str, dict[str, Citation]] = field(default_factory=lambda: defaultdict(dict))
    repo: dict[str, Citation] = field(default_factory=dict)

    @classmethod
    def build(cls, cites: list[Citation]) -> "CitationMap":
        m = cls()
        for c in cites:
            if not c.resolved:
                continue
            if c.chunk_id:
                m.by_chunk[c.chunk_id].setdefault(c.resolved, c)
            if c.path:
                m.by_path[c.path].setdefault(c.resolved, c)
            if c.repo_level:
                m.repo.setdefault(c.resolved, c)
        return m


def _entity_text(ch: Chunk, max_chars: int) -> str:
    head = " ".join(x for x in (ch.kind, ch.qualified_name or ch.name, ch.signature) if x)
    if ch.heading_path:
        head += "\n" + " > ".join(ch.heading_path)
    body = "\n".join(x for x in (ch.comment, ch.explanation, ch.text) if x)
    return f"{head}\n{body}"[: max_chars + len(head)]


def _paper_text(p: PaperRecord) -> str:
    return f"{p.title}. {', '.join(p.keywords)}. {p.abstract}"


class Linker:
    """Scores papers for code entities. Build once per library; reuse for many entities."""

    def __init__(self, papers: list[PaperRecord], settings, embedder=None):
        self.settings = settings
        self.ps: PaperSettings = settings.papers
        self.papers = papers
        self.index = RecordIndex(papers)
        self._embedder = embedder
        self._paper_vecs: np.ndarray | None = None
        self.pterms = [T.paper_terms(p.title, p.keywords) for p in papers]
        self.phrases = [T.keyword_phrases(p.keywords) for p in papers]
        df = Counter(t for ts in self.pterms for t in ts)
        n = max(len(papers), 1)
        self.idf = {t: math.log((n + 1) / (d + 0.5)) for t, d in df.items()}
        self.mean_idf = float(np.mean(list(self.idf.values()))) if self.idf else 1.0
        counts = [p.citation_count for p in papers if p.citation_count]
        self.max_log_cites = math.log1p(max(counts)) if counts else 0.0
        self.fts = self._build_fts(papers)

    @staticmethod
    def _build_fts(papers: list[PaperRecord]) -> sqlite3.Connection:
        """An in-memory FTS5 copy: linking never holds the library file open or writes to it."""
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE f USING fts5(i UNINDEXED, title, keywords, abstract, "
                     "tokenize = 'porter unicode61 remove_diacritics 2')")
        from .identity import fold

        conn.executemany("INSERT INTO f VALUES (?, ?, ?, ?)",
                         [(i, fold(p.title), fold(" ; ".join(p.keywords)), fold(p.abstract))
                          for i, p in enumerate(papers)])
        return conn

    @property
    def embedder(self):
        if self._embedder is None:
            from ..embed import load_embedder

            self._embedder = load_embedder(self.settings.embedding)
        return self._embedder

    @property
    def paper_vecs(self) -> np.ndarray:
        if self._paper_vecs is None:
            self._paper_vecs = self.embedder.embed([_paper_text(p) for p in self.papers])
        return self._paper_vecs

    # ---- scoring ----------------------------------------------------------------------------

    def link(self, entities: list[Chunk], cmap: CitationMap,
             related: dict[str, set[str]] | None = None) -> dict[str, list[PaperLink]]:
        """Links per entity id, best first, at least `min_score`. `related` maps an entity id to
        other chunk ids whose citations count as its own (declaration/definition, split parts)."""
        if not self.papers or not entities:
            return {}
        ps, w = self.ps, self.ps.weights
        contentful = [e for e in entities if len((e.comment + e.text + e.explanation).strip())
                      >= ps.min_entity_chars]
        sims = np.zeros((len(entities), len(self.papers)), dtype=np.float32)
        if contentful:
            rows = {e.id: i for i, e in enumerate(entities)}
            vecs = self.embedder.embed([_entity_text(e, ps.entity_chars) for e in contentful])
            sims[[rows[e.id] for e in contentful]] = vecs @ self.paper_vecs.T
        content_ids = {e.id for e in contentful}
        this_year = date.today().year
        out: dict[str, list[PaperLink]] = {}
        for row, ent in enumerate(entities):
            cited_here = self._cited_here(ent, cmap, related or {})
            cited_file = {} if ent.kind == "file" else cmap.by_path.get(ent.path, {})
            cands: dict[int, None] = {}
            eterms: Counter = Counter()
            lex: dict[int, float] = {}
            if ent.id in content_ids:
                prose = ent.kind in _PROSE_KINDS
                eterms = T.entity_terms(ent.name, ent.comment, ent.explanation, ent.text, prose)
                for i in np.argsort(-sims[row])[: ps.dense_k]:
                    cands[int(i)] = None
                lex = self._lexical(eterms)
                cands.update(dict.fromkeys(lex))
            key_to_i = {p.key: i for i, p in enumerate(self.papers)}
            for key in list(cited_here) + list(cited_file):
                if key in key_to_i:
                    cands[key_to_i[key]] = None
            links = []
            for i in cands:
                p = self.papers[i]
                parts: list[tuple[float, str]] = []
                if p.key in cited_here:
                    c = cited_here[p.key]
                    parts.append((w.cited_in_chunk, f"cited here: '{c.text.strip()}'"
                                  + (f" (line {c.line})" if c.line else "")))
                elif p.key in cited_file:
                    c = cited_file[p.key]
                    parts.append((w.cited_in_file, f"cited in the same file ({ent.path}"
                                  + (f":{c.line})" if c.line else ")")))
                if ent.id in content_ids:
                    sem = (float(sims[row, i]) - ps.semantic_floor) / max(
                        ps.semantic_ceiling - ps.semantic_floor, 1e-6)
                    if sem > 0:
                        parts.append((w.semantic * min(sem, 1.0),
                                      f"text similarity {float(sims[row, i]):.2f}"))
                    conc, shown = self._concepts(eterms, i)
                    if conc > 0:
                        parts.append((w.concepts * conc, f"shared concepts: {shown}"))
                    if i in lex:
                        parts.append((w.lexical * lex[i], "full-text match"))
                content = sum(v for v, _ in parts)
                if content <= 0:
                    continue
                if p.key in cmap.repo and p.key not in cited_here:
                    c = cmap.repo[p.key]
                    parts.append((w.cited_in_repo, f"cited by the project ({c.path})"))
                if p.year:
                    parts.append((w.recency * min(max((p.year - 1900) / (this_year - 1900), 0), 1),
                                  ""))
                if p.citation_count and self.max_log_cites:
                    parts.append((w.citation_count * math.log1p(p.citation_count)
                                  / self.max_log_cites, f"{p.citation_count} citations"))
                score = min(sum(v for v, _ in parts), 1.0)
                if score < ps.min_score:
                    continue
                reasons = [f"{r} (+{v:.2f})" for v, r in sorted(parts, key=lambda t: -t[0])
                           if r and v >= 0.005]
                links.append(p.to_link(score, reasons, [ent.id]))
            links.sort(key=lambda l: (-l.score, l.key))
            if links:
                out[ent.id] = links[: ps.max_links]
        return out

    def _cited_here(self, ent: Chunk, cmap: CitationMap,
                    related: dict[str, set[str]]) -> dict[str, Citation]:
        cited: dict[str, Citation] = {}
        ids = {ent.id} | related.get(ent.id, set())
        for cid in ids:
            for k, c in cmap.by_chunk.get(cid, {}).items():
                cited.setdefault(k, c)
        if ent.kind == "file":  # a file entity stands for the whole file
            for k, c in cmap.by_path.get(ent.path, {}).items():
                cited.setdefault(k, c)
        return cited

    def _lexical(self, eterms: Counter) -> dict[int, float]:
        """FTS5 BM25 over the entity's strongest terms; relative to the best hit, damped when
        even the best hit is weak (so an entity with no real match gets no lexical credit)."""
        top = [t for t, _ in eterms.most_common(24) if t in self.idf]
        q = fts_query(" ".join(top))
        if not q:
            return {}
        rows = self.fts.execute("SELECT i, bm25(f, 0.0, 4.0, 3.0, 1.0) AS s FROM f WHERE f MATCH ? "
                                "ORDER BY s LIMIT ?", (q, self.ps.lexical_k)).fetchall()
        if not rows:
            return {}
        best = -rows[0][1]
        damp = 1 - math.exp(-best / 8.0)
        return {int(i): (-s / best) * damp for i, s in rows if best > 0}

    def _concepts(self, eterms: Counter, i: int) -> tuple[float, str]:
        """IDF mass of the paper's terms that the entity uses, saturating at a few distinctive
        terms; also names the keywords matched as whole phrases."""
        pt = self.pterms[i]
        matched = [t for t in pt if t in eterms]
        if not matched:
            return 0.0, ""
        mass = sum(self.idf.get(t, 0.0) for t in matched)
        total = sum(self.idf.get(t, 0.0) for t in pt)
        cap = min(total, 4.0 * self.mean_idf)
        score = min(mass / cap, 1.0) if cap > 0 else 0.0
        phrases = [k for k, ws in self.phrases[i] if len(ws) > 0 and ws <= eterms.keys()]
        shown = phrases[:3] or sorted(matched, key=lambda t: -self.idf.get(t, 0))[:4]
        return score, ", ".join(shown)


# ---- index-directory entry points -------------------------------------------------------------

def read_records(index_dir: Path) -> list[Chunk]:
    path = Path(index_dir) / "records.jsonl"
    if not path.is_file():
        raise UserError(f"{index_dir}: no records.jsonl (build the index first)")
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    out.append(Chunk.model_validate_json(line))
                except ValueError:
                    raise UserError(f"{path}:{n}: not a valid record") from None
    return out


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
    from ..settings import Settings

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
    links = linker.link(entities, CitationMap.build(cites), related_ids(records))
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
    atomic_write_text(out, json.dumps(doc, indent=1, ensure_ascii=False))
    unresolved = sorted({f"{c.path}:{c.line}: {c.text.strip()} ({c.resolution})"
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
    return sorted(best.values(), key=lambda l: (-l.score, l.key))[:k]


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
    from ..settings import Settings

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
    links = linker.link(ents, CitationMap.build(cites), related_ids(records))
    return merge_links(list(links.values()), k)
