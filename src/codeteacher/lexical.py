"""Identifier-aware tokens and the BM25 index (bm25s) built over them.

Code search fails with plain word tokenisers: `FFTPoissonSolver` must match "poisson solver"
and "FFTPoissonSolver" alike. So each identifier yields itself (lower-cased) plus its camelCase
and snake_case parts; qualified names also yield their last component.
"""
from __future__ import annotations

import re
from pathlib import Path

import bm25s
import numpy as np
from bm25s.tokenization import Tokenized

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+[A-Za-z][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
STOP = frozenset("""
a an and are as at be by can do does for from how i if in into is it its of on or that the
their them then there these this to was what when where which while who why will with within
would you your should could does did doing use used using via each than also only not
""".split())


def split_identifier(word: str) -> list[str]:
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return parts


def tokenize(text: str) -> list[str]:
    """Tokens for BM25: whole identifiers plus their parts, stop words removed."""
    out: list[str] = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        low = word.lower().strip("_")
        if len(low) < 2 or low in STOP:
            continue
        out.append(low)
        parts = split_identifier(word)
        if len(parts) > 1:
            out.extend(p for p in parts if len(p) > 1 and p not in STOP)
    return out


class LexicalIndex:
    """BM25 over token lists; scores for every document at once (corpora are small)."""

    def __init__(self, retriever: bm25s.BM25):
        self._r = retriever
        self.vocab = retriever.vocab_dict

    @classmethod
    def build(cls, docs: list[list[str]]) -> "LexicalIndex":
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(t, len(vocab)) for t in d] or [vocab.setdefault("", len(vocab))]
               for d in docs]
        vocab.setdefault("", len(vocab))
        retriever = bm25s.BM25()
        retriever.index(Tokenized(ids=ids, vocab=vocab), show_progress=False)
        return cls(retriever)

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        known = [t for t in dict.fromkeys(query_tokens) if t in self.vocab and t]
        if not known:
            return np.zeros(self._r.scores["num_docs"], dtype=np.float32)
        return np.asarray(self._r.get_scores(known), dtype=np.float32)

    def save(self, folder: Path) -> None:
        self._r.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path) -> "LexicalIndex":
        return cls(bm25s.BM25.load(str(folder), show_progress=False))
