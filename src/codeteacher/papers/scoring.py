"""Scoring papers for code entities: candidates, signals, weights, reasons.

Candidates per entity come from embedding search (entity text + explanation against paper
title + keywords + abstract), FTS5 over the entity's concept terms, and explicit citations.
Each candidate gets a weighted sum of signals in [0, 1] (weights and their rationale live in
`PaperLinkWeights`); links under `min_score` are not kept.
"""
from __future__ import annotations

import math
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from ..contracts.models import Chunk, PaperLink
from . import terms as T
from .citations import Citation, RecordIndex
from ..contracts.settings.papers import PaperSettings
from .identity import fold
from .library import fts_query
from . import vectors as PV
from .model import PaperRecord
from .state import LibraryState
from .vectors import PaperVectors

PROSE_KINDS = {"doc_section", "file", "module", "call_chain"}
# BM25 column weights over the library's papers_fts (key, title, authors, keywords, abstract,
# venue): what a paper is about, not who wrote it or where
_BM25 = "bm25(papers_fts, 0.0, 4.0, 0.0, 3.0, 1.0, 0.0)"


def chunk_terms(ch: Chunk) -> Counter:
    """The concept terms of a chunk, as linking weighs them."""
    return T.entity_terms(ch.name, ch.comment, ch.explanation, ch.text, ch.kind in PROSE_KINDS,
                          _context(ch))


def corpus_term_df(corpus: list[Chunk], terms: dict[str, Counter] | None = None
                   ) -> tuple[int, Counter]:
    """Document frequency of every concept term in a codebase's linkable chunks (computed once
    per index: it does not depend on the library). `terms`: chunk_terms by id, where known."""
    df: Counter = Counter()
    for ch in corpus:
        df.update((terms[ch.id] if terms and ch.id in terms else chunk_terms(ch)).keys())
    return len(corpus), df


def code_specificity(corpus_df: tuple[int, Counter], idf: dict[str, float]) -> dict[str, float]:
    """Per paper term, how distinctive it is within this codebase: (log(N/df)/log(N))^0.75, so
    words used all over the code (a namespace, 'mesh' in a mesh code) count less. Small
    corpora skip this."""
    n, df = corpus_df
    if n < 20:
        return {}
    # softened (power < 1): a term frequent here may still be this entity's concept
    return {t: (math.log(n / d) / math.log(n)) ** 0.75 for t, d in df.items() if t in idf}


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


def _context(ch: Chunk) -> str:
    """Owning class and the file's name and folder (not the namespace: a project's namespace
    names the project, not a concept)."""
    parts = ch.path.rsplit("/", 2)[-2:]
    stem = parts[-1].rsplit(".", 1)[0]
    return " ".join([ch.class_name, stem, parts[0] if len(parts) > 1 else ""])


class Linker:
    """Scores papers for code entities. Build once per library; reuse for many entities."""

    def __init__(self, papers: list[PaperRecord] | None, settings, embedder=None,
                 vectors: PaperVectors | None = None, fts: sqlite3.Connection | None = None,
                 state: LibraryState | None = None):
        """Either `papers` (all held in memory; tests, benchmarks) or a prepared `state` with
        `fts`, a connection to the library whose records are then read only when they are
        candidates. `vectors`: the papers' vectors in `state.keys` order, embedded now when
        absent. `fts`: a connection holding `papers_fts`; built in memory when absent."""
        self.settings = settings
        self.ps: PaperSettings = settings.papers
        if state is None:
            state = LibraryState.compute(papers or [])
        self.state = state
        self.keys = state.keys
        self.key_to_i = {k: i for i, k in enumerate(self.keys)}
        held = papers or []
        self.fts = fts if fts is not None else self._build_fts(held)
        self.index = RecordIndex(held, state=None if held else state,
                                 lookup=None if held else self._fetch)
        self._embedder = embedder
        self._vectors = vectors
        self.pterms = state.terms
        self.phrases = state.phrases
        self.idf = state.idf
        self.mean_idf, self.max_idf = state.mean_idf, state.max_idf
        self.max_log_cites = state.max_log_cites
        self.code_spec: dict[str, float] = {}
        self._spec_of = None

    def _fetch(self, key: str) -> PaperRecord | None:
        row = self.fts.execute("SELECT data FROM papers WHERE key = ?", (key,)).fetchone()
        return PaperRecord.model_validate_json(row[0]) if row else None

    def record(self, i: int) -> PaperRecord:
        return self.index.record(self.keys[i])

    @property
    def papers(self) -> list[PaperRecord]:
        """Every record (read on demand when the linker was built from a prepared state)."""
        return [self.record(i) for i in range(len(self.keys))]

    @staticmethod
    def _build_fts(papers: list[PaperRecord]) -> sqlite3.Connection:
        """An in-memory copy of the library's full-text table, for papers given as a list."""
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute("CREATE VIRTUAL TABLE papers_fts USING fts5(key UNINDEXED, title, authors, "
                     "keywords, abstract, venue, tokenize = 'porter unicode61 remove_diacritics 2')")
        conn.executemany("INSERT INTO papers_fts VALUES (?, ?, '', ?, ?, '')",
                         [(p.key, fold(p.title), fold(" ; ".join(p.keywords)), fold(p.abstract))
                          for p in papers])
        return conn

    @property
    def embedder(self):
        if self._embedder is None:
            from ..embedding import load_embedder

            self._embedder = load_embedder(self.settings.embedding)
        return self._embedder

    @property
    def vectors(self) -> PaperVectors:
        if self._vectors is None:
            from ..embedding import model_id

            self._vectors = PV.in_memory(self.papers, model_id(self.settings.embedding),
                                         self.embedder.embed)
        return self._vectors

    # ---- scoring ----------------------------------------------------------------------------

    def link(self, entities: list[Chunk], cmap: CitationMap,
             related: dict[str, set[str]] | None = None,
             corpus: list[Chunk] | None = None,
             vectors: dict[str, np.ndarray] | None = None,
             corpus_df: tuple[int, Counter] | None = None,
             terms: dict[str, Counter] | None = None,
             progress=None) -> dict[str, list[PaperLink]]:
        """Links per entity id, best first, at least `min_score`: papers cited by the entity
        first, then by score. `related` maps an entity id to other chunk ids whose citations
        count as its own (declaration/definition, split parts). `corpus` (default: the entities)
        is the code whose term frequencies tell which words are everyday vocabulary of this
        codebase rather than distinctive concepts; `corpus_df` is the same precomputed
        (`corpus_term_df`). `vectors` are precomputed entity embeddings by id (the index's own);
        missing ones are embedded. `terms`: precomputed `chunk_terms` by id. `progress(n)` is
        told of each entity done."""
        if not self.keys or not entities:
            return {}
        ps = self.ps
        contentful = [e for e in entities if len((e.comment + e.text + e.explanation).strip())
                      >= ps.min_entity_chars]
        corpus_df = corpus_df or corpus_term_df(corpus if corpus is not None else entities)
        if self._spec_of is not corpus_df:  # the same codebase as last time: reuse
            self.code_spec, self._spec_of = code_specificity(corpus_df, self.idf), corpus_df
        known: dict[str, np.ndarray] = {}
        if contentful:
            vectors = vectors or {}
            todo = [e for e in contentful if e.id not in vectors]
            fresh = (self.embedder.embed([_entity_text(e, ps.entity_chars) for e in todo])
                     if todo else [])  # the model is loaded only when something needs it
            known = {e.id: vectors[e.id] for e in contentful if e.id in vectors}
            known.update({e.id: v for e, v in zip(todo, fresh)})
        out: dict[str, list[PaperLink]] = {}
        for ent in entities:
            links = self._link_one(ent, known.get(ent.id), cmap, related or {},
                                   (terms or {}).get(ent.id))
            if links:
                out[ent.id] = links
            if progress:
                progress(1)
        return out

    def _link_one(self, ent: Chunk, q: np.ndarray | None, cmap: CitationMap,
                  related: dict[str, set[str]], eterms: Counter | None) -> list[PaperLink]:
        ps, w = self.ps, self.ps.weights
        cited_here = self._cited_here(ent, cmap, related)
        cited_file = {} if ent.kind == "file" else cmap.by_path.get(ent.path, {})
        cands: dict[int, None] = {}
        lex: dict[int, float] = {}
        sims: dict[int, float] = {}
        eterms = eterms if q is not None else Counter()
        span = max(ps.semantic_ceiling - ps.semantic_floor, 1e-6)
        base_sim = ps.semantic_floor
        if q is not None:  # enough content to be matched on it
            pv = self.vectors
            base_sim = max(ps.semantic_floor, pv.mean_similarity(q) + ps.semantic_margin)
            cands.update(dict.fromkeys(pv.nearest(q, ps.dense_k)))
            eterms = eterms if eterms is not None else chunk_terms(ent)
            lex = self._lexical(eterms)
            cands.update(dict.fromkeys(lex))
        for key in list(cited_here) + list(cited_file):
            if key in self.key_to_i:
                cands[self.key_to_i[key]] = None
        if q is not None and cands:
            rows = list(cands)
            sims = dict(zip(rows, (float(x) for x in self.vectors.similarity(q, rows))))
        this_year = date.today().year
        links = []
        for i in cands:
            p = self.record(i)
            parts: list[tuple[float, str, str]] = []  # (value, signal, reason)
            if p.key in cited_here:
                c = cited_here[p.key]
                parts.append((w.cited_in_chunk, "citation", f"cited here: '{c.text.strip()}'"
                              + (f" (line {c.line})" if c.line else "")))
            elif p.key in cited_file:
                c = cited_file[p.key]
                parts.append((w.cited_in_file, "file citation", "cited in the same file "
                              f"({ent.path}" + (f":{c.line})" if c.line else ")")))
            if q is not None:
                sem = (sims[i] - base_sim) / span
                conc, shown = self._concepts(eterms, i)
                if sem > 0:
                    # similarity the paper's terms do not back up is weaker evidence: in a
                    # large library many papers read alike without being about this code
                    agree = min(1.0, ps.semantic_alone + (1 - ps.semantic_alone)
                                * conc / max(ps.semantic_agreement, 1e-6))
                    parts.append((w.semantic * min(sem, 1.0) * agree, "semantic",
                                  f"text similarity {sims[i]:.2f}"
                                  + ("" if conc > 0 else ", no shared concepts")))
                if conc > 0:
                    parts.append((w.concepts * conc, "concepts", f"shared concepts: {shown}"))
                    if i in lex:  # ranks papers that share concepts; never links alone
                        parts.append((w.lexical * lex[i], "full-text", "full-text match"))
            # a citation elsewhere in the file or project never links on its own
            if not any(v > 0 for v, sig, _ in parts if sig != "file citation"):
                continue
            if p.key in cmap.repo and p.key not in cited_here and p.key not in cited_file:
                c = cmap.repo[p.key]
                parts.append((w.cited_in_repo, "project citation",
                              f"cited by the project ({c.path})"))
            if p.year:
                parts.append((w.recency * min(max((p.year - 1900) / (this_year - 1900), 0), 1),
                              "", ""))
            if p.citation_count and self.max_log_cites:
                parts.append((w.citation_count * math.log1p(p.citation_count)
                              / self.max_log_cites, "", f"{p.citation_count} citations"))
            raw = sum(v for v, _, _ in parts)
            if raw < ps.min_score:
                continue
            ranked = sorted(parts, key=lambda t: -t[0])
            signal = "citation" if p.key in cited_here else next(
                sig for _, sig, _ in ranked if sig and sig != "file citation")
            reasons = [f"{r} (+{v:.2f})" for v, _, r in ranked if r and v >= 0.005]
            links.append((p.key not in cited_here, -raw,
                          p.to_link(min(raw, 1.0), reasons, [ent.id], signal)))
        # cited papers first; then by the uncapped sum, so two cited papers keep a sensible order
        links.sort(key=lambda t: (t[0], t[1], t[2].key))
        return [l for _, _, l in links[: ps.max_links]]

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
        rows = self.fts.execute(f"SELECT key, {_BM25} AS s FROM papers_fts WHERE papers_fts "
                                "MATCH ? ORDER BY s LIMIT ?", (q, self.ps.lexical_k)).fetchall()
        rows = [(self.key_to_i[k], s) for k, s in rows if k in self.key_to_i]
        if not rows:
            return {}
        best = -rows[0][1]
        damp = 1 - math.exp(-best / 8.0)
        return {int(i): (-s / best) * damp for i, s in rows if best > 0}

    def _concepts(self, eterms: Counter, i: int) -> tuple[float, str]:
        """IDF mass (library IDF x codebase specificity) of the paper's terms that the entity
        uses, saturating at a few distinctive terms; names the keywords matched as phrases."""
        pt = self.pterms[i]
        matched = [t for t in pt if t in eterms]
        if not matched:
            return 0.0, ""
        weight = {t: self.idf.get(t, 0.0) * self.code_spec.get(t, 1.0) for t in matched}
        total = sum(self.idf.get(t, 0.0) for t in pt)
        cap = min(total, self.ps.concept_saturation * self.mean_idf)
        score = sum(weight.values()) / cap if cap > 0 else 0.0
        # a keyword the authors chose, present as a whole, counts once more: its mean
        # distinctiveness (library IDF relative to the rarest term) times the code specificity
        # of its most common word (a keyword that is also an everyday identifier, such as a
        # library or project name used all over the code, earns next to nothing)
        phrases = [k for k, ws in self.phrases[i] if ws and eterms.keys() >= set(ws)]
        for k, ws in self.phrases[i]:
            if ws and eterms.keys() >= set(ws):
                spec = min(self.code_spec.get(t, 1.0) for t in ws)
                score += self.ps.phrase_bonus * spec * sum(
                    weight[t] for t in ws if t in weight) / (len(ws) * self.max_idf)
        shown = phrases[:3] or sorted(matched, key=lambda t: -weight[t])[:4]
        # soft saturation keeps strong matches ordered instead of all hitting a cap
        return 1.0 - math.exp(-score), ", ".join(shown)
