"""How much the index holds on a question, from the retrieval evidence alone (no model).

Four signals, weighted by settings (generation.confidence):
- similarity: the best embedding similarity between the question and the top items, mapped
  linearly from similarity_floor (0) to similarity_full (1).
- term support: the IDF-weighted share of the question's words that occur in the top items.
  A word the index does not know at all weighs as much as the rarest word: questions about
  things a repository does not contain ("the GPU ray tracer") name exactly such words.
- agreement: the top items were found by both the dense and the BM25 channel (each within its
  top 10), or by a file/symbol the question names.
- named things: the share of code-shaped names in the question (files, CamelCase, snake_case,
  qualified names) that the index holds; any missing one also multiplies the confidence down.
"""
from __future__ import annotations

import re

import numpy as np
from pydantic import BaseModel, Field

from ..contracts.models import SearchHit
from ..index.layout import lexical_text
from ..index.lexical import STOP, tokenize
from .grounding import names_in

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RANK = re.compile(r"^(dense|bm25) #(\d+)$")
_GENERIC = frozenset("""
code file files function functions class classes method methods implement implemented
implementation implementing defined define definition declared located happen happens work works
done handle handled handling role purpose part responsible compute computed computes value values
variable variables type types call called calls caller callers used user example repository project
""".split())


class Confidence(BaseModel):
    score: float
    low: bool
    similarity: float | None = None
    term_support: float
    agreement: float
    named_found: float | None = None  # share of the question's code names the index holds
    missing_terms: list[str] = Field(default_factory=list)  # question words in no top item
    missing_names: list[str] = Field(default_factory=list)  # named things the index lacks


def _agrees(hit: SearchHit) -> bool:
    ranks = {}
    for why in hit.why:
        m = _RANK.match(why)
        if m:
            ranks[m.group(1)] = min(ranks.get(m.group(1), 99), int(m.group(2)))
        elif "named" in why:  # "symbol 'x' named", "file named in question"
            return True
    return ranks.get("dense", 99) <= 10 and ranks.get("bm25", 99) <= 10


def _known(name: str, store) -> bool:
    base = name.rsplit("/", 1)[-1]
    tail = name.split("::")[-1]
    if store.by_basename.get(base) or store.by_basename.get(base.lower()):
        return True
    if store.by_symbol.get(name) or store.by_symbol.get(tail) \
            or store.by_symbol_lower.get(tail.lower()):
        return True
    return tail.lower() in store.lexical.vocab


def best_similarity(hits: list[SearchHit], store, qvec, n: int) -> float | None:
    rows = [store.by_id[h.chunk.id] for h in hits[:n] if h.chunk.id in store.by_id]
    if qvec is None or not rows:
        return None
    return float((np.asarray(store.vectors[sorted(rows)]) @ np.asarray(qvec)).max())


def assess(question: str, hits: list[SearchHit], store, cfg, qvec=None) -> Confidence:
    """Confidence of an answer to `question` from `hits` (cfg: ConfidenceSettings; qvec: the
    question's embedding, without it the similarity signal is left out)."""
    if not hits:
        return Confidence(score=0.0, low=True, term_support=0.0, agreement=0.0)
    # What the question found itself: items brought by the graph (a seed's caller, its file's
    # symbols) say how connected the code is, not how much of the question the index holds.
    hits = [h for h in hits if h.evidence_class == "primary"] or hits
    # One term per question word (tokenize also yields identifier parts and stems).
    terms = {}
    for word in _WORD.findall(question):
        toks = [t for t in tokenize(word) if t not in STOP and t not in _GENERIC and len(t) > 2]
        if toks and word.lower() not in _GENERIC:
            terms.setdefault(toks[0], set(toks))
    lex = store.lexical
    top_tokens: set[str] = set()
    cache = store.memo("token_sets")
    for h in hits[: cfg.items]:
        if h.chunk.id not in cache:
            cache[h.chunk.id] = frozenset(tokenize(lexical_text(h.chunk)))
        top_tokens |= cache[h.chunk.id]
    # idf() of a word the index lacks is the largest there is.
    weights = {t: lex.idf(t) for t in terms}
    total = sum(weights.values())
    hit = {t for t, forms in terms.items() if forms & top_tokens}
    found = sum(w for t, w in weights.items() if t in hit)
    support = found / total if total else 1.0
    missing_terms = [t for t in terms if t not in hit]
    agreement = sum(_agrees(h) for h in hits[: cfg.items]) / min(cfg.items, len(hits))
    names = names_in(question)
    missing_names = [n for n in names if not _known(n, store)]
    named = (1 - len(missing_names) / len(names)) if names else None
    sim = best_similarity(hits, store, qvec, cfg.items)
    parts = [(cfg.term_support, support), (cfg.agreement, agreement),
             (cfg.named, 1.0 if named is None else named)]
    if sim is not None:
        span = max(cfg.similarity_full - cfg.similarity_floor, 1e-6)
        parts.append((cfg.similarity, min(1.0, max(0.0, (sim - cfg.similarity_floor) / span))))
    wsum = sum(w for w, _ in parts)
    score = sum(w * v for w, v in parts) / (wsum or 1.0)
    if missing_names:
        score *= cfg.missing_name_factor
    return Confidence(score=round(score, 3), low=cfg.enabled and score < cfg.low,
                      similarity=None if sim is None else round(sim, 3),
                      term_support=round(support, 3), agreement=round(agreement, 3),
                      named_found=None if named is None else round(named, 3),
                      missing_terms=missing_terms, missing_names=missing_names)
