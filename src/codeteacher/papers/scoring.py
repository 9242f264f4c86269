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
from ..contracts.settings.papers import PaperSettings
from . import terms as T
from .citations import Citation, RecordIndex
from .identity import fold
from .library import fts_query
from .model import PaperRecord

PROSE_KINDS = {"doc_section", "file", "module", "call_chain"}


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


def _paper_text(p: PaperRecord) -> str:
    return f"{p.title}. {', '.join(p.keywords)}. {p.abstract}"


class Linker:
    """Scores papers for code entities. Build once per library; reuse for many entities."""

    def __init__(self, papers: list[PaperRecord], settings, embedder=None):
        self.settings = settings
        self.ps: PaperSettings = settings.papers
        self.papers = papers
        self.index = RecordIndex(papers)
        self.key_to_i = {p.key: i for i, p in enumerate(papers)}
        self._embedder = embedder
        self._paper_vecs: np.ndarray | None = None
        self.pterms = [T.paper_terms(p.title, p.keywords) for p in papers]
        self.phrases = [T.keyword_phrases(p.keywords) for p in papers]
        df = Counter(t for ts in self.pterms for t in ts)
        n = max(len(papers), 1)
        self.idf = {t: math.log((n + 1) / (d + 0.5)) for t, d in df.items()}
        self.mean_idf = float(np.mean(list(self.idf.values()))) if self.idf else 1.0
        self.max_idf = max(self.idf.values(), default=1.0)
        counts = [p.citation_count for p in papers if p.citation_count]
        self.max_log_cites = math.log1p(max(counts)) if counts else 0.0
        self.fts = self._build_fts(papers)

    @staticmethod
    def _build_fts(papers: list[PaperRecord]) -> sqlite3.Connection:
        """An in-memory FTS5 copy: linking never holds the library file open or writes to it."""
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE f USING fts5(i UNINDEXED, title, keywords, abstract, "
                     "tokenize = 'porter unicode61 remove_diacritics 2')")
        conn.executemany("INSERT INTO f VALUES (?, ?, ?, ?)",
                         [(i, fold(p.title), fold(" ; ".join(p.keywords)), fold(p.abstract))
                          for i, p in enumerate(papers)])
        return conn

    @property
    def embedder(self):
        if self._embedder is None:
            from ..embedding import load_embedder

            self._embedder = load_embedder(self.settings.embedding)
        return self._embedder

    @property
    def paper_vecs(self) -> np.ndarray:
        if self._paper_vecs is None:
            self._paper_vecs = self.embedder.embed([_paper_text(p) for p in self.papers])
        return self._paper_vecs

    # ---- scoring ----------------------------------------------------------------------------

    def link(self, entities: list[Chunk], cmap: CitationMap,
             related: dict[str, set[str]] | None = None,
             corpus: list[Chunk] | None = None,
             vectors: dict[str, np.ndarray] | None = None) -> dict[str, list[PaperLink]]:
        """Links per entity id, best first, at least `min_score`. `related` maps an entity id to
        other chunk ids whose citations count as its own (declaration/definition, split parts).
        `corpus` (default: the entities) is the code whose term frequencies tell which words are
        everyday vocabulary of this codebase rather than distinctive concepts. `vectors` are
        precomputed entity embeddings by id (the index's own); missing ones are embedded."""
        if not self.papers or not entities:
            return {}
        ps, w = self.ps, self.ps.weights
        contentful = [e for e in entities if len((e.comment + e.text + e.explanation).strip())
                      >= ps.min_entity_chars]
        self._code_specificity(corpus if corpus is not None else entities)
        known: dict[str, np.ndarray] = {}
        if contentful:
            vectors = vectors or {}
            todo = [e for e in contentful if e.id not in vectors]
            fresh = self.embedder.embed([_entity_text(e, ps.entity_chars) for e in todo])
            known = {e.id: vectors[e.id] for e in contentful if e.id in vectors}
            known.update({e.id: v for e, v in zip(todo, fresh)})
        content_ids = {e.id for e in contentful}
        this_year = date.today().year
        out: dict[str, list[PaperLink]] = {}
        for ent in entities:
            # one row at a time: entities x papers never has to fit in memory at once
            sim = (self.paper_vecs @ known[ent.id] if ent.id in known
                   else np.zeros(len(self.papers), dtype=np.float32))
            cited_here = self._cited_here(ent, cmap, related or {})
            cited_file = {} if ent.kind == "file" else cmap.by_path.get(ent.path, {})
            cands: dict[int, None] = {}
            eterms: Counter = Counter()
            lex: dict[int, float] = {}
            span = max(ps.semantic_ceiling - ps.semantic_floor, 1e-6)
            base_sim = max(ps.semantic_floor, float(sim.mean()) + ps.semantic_margin)
            if ent.id in content_ids:
                prose = ent.kind in PROSE_KINDS
                eterms = T.entity_terms(ent.name, ent.comment, ent.explanation, ent.text, prose,
                                        _context(ent))
                for i in np.argsort(-sim)[: ps.dense_k]:
                    cands[int(i)] = None
                lex = self._lexical(eterms)
                cands.update(dict.fromkeys(lex))
            for key in list(cited_here) + list(cited_file):
                if key in self.key_to_i:
                    cands[self.key_to_i[key]] = None
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
                    sem = (float(sim[i]) - base_sim) / span
                    if sem > 0:
                        parts.append((w.semantic * min(sem, 1.0),
                                      f"text similarity {float(sim[i]):.2f}"))
                    conc, shown = self._concepts(eterms, i)
                    if conc > 0:
                        parts.append((w.concepts * conc, f"shared concepts: {shown}"))
                        if i in lex:  # ranks papers that share concepts; never links alone
                            parts.append((w.lexical * lex[i], "full-text match"))
                # a citation elsewhere in the file or project never links on its own
                if not any(v > 0 for v, r in parts if not r.startswith("cited in the same")):
                    continue
                if p.key in cmap.repo and p.key not in cited_here and p.key not in cited_file:
                    c = cmap.repo[p.key]
                    parts.append((w.cited_in_repo, f"cited by the project ({c.path})"))
                if p.year:
                    parts.append((w.recency * min(max((p.year - 1900) / (this_year - 1900), 0), 1),
                                  ""))
                if p.citation_count and self.max_log_cites:
                    parts.append((w.citation_count * math.log1p(p.citation_count)
                                  / self.max_log_cites, f"{p.citation_count} citations"))
                raw = sum(v for v, _ in parts)
                if raw < ps.min_score:
                    continue
                reasons = [f"{r} (+{v:.2f})" for v, r in sorted(parts, key=lambda t: -t[0])
                           if r and v >= 0.005]
                links.append((raw, p.to_link(min(raw, 1.0), reasons, [ent.id])))
            # ranked by the uncapped sum, so two cited papers still come out in a sensible order
            links.sort(key=lambda t: (-t[0], t[1].key))
            if links:
                out[ent.id] = [l for _, l in links[: ps.max_links]]
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

    def _code_specificity(self, corpus: list[Chunk]) -> None:
        """Per term, how distinctive it is within this codebase: (log(N/df)/log(N))^0.75, so
        words used all over the code (a namespace, 'mesh' in a mesh code) count less. Small
        corpora skip this."""
        self.code_spec: dict[str, float] = {}
        n = len(corpus)
        if n < 20:
            return
        df: Counter = Counter()
        for ch in corpus:
            df.update(set(T.entity_terms(ch.name, ch.comment, ch.explanation, ch.text,
                                         ch.kind in PROSE_KINDS, _context(ch)))
                      & self.idf.keys())
        # softened (power < 1): a term frequent here may still be this entity's concept
        self.code_spec = {t: (math.log(n / d) / math.log(n)) ** 0.75 for t, d in df.items()}

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
        phrases = [k for k, ws in self.phrases[i] if ws and ws <= eterms.keys()]
        for k, ws in self.phrases[i]:
            if ws and ws <= eterms.keys():
                spec = min(self.code_spec.get(t, 1.0) for t in ws)
                score += self.ps.phrase_bonus * spec * sum(
                    weight[t] for t in ws if t in weight) / (len(ws) * self.max_idf)
        shown = phrases[:3] or sorted(matched, key=lambda t: -weight[t])[:4]
        # soft saturation keeps strong matches ordered instead of all hitting a cap
        return 1.0 - math.exp(-score), ", ".join(shown)
