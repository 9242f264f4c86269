"""Extractive answers: what to say when no language model is configured.

The answer is assembled from the best evidence (its explanation, comment or derived summary),
so it is always grounded; the Evidence list carries path:lines and a one-line description.
"""
from __future__ import annotations

import re

from ..contracts.models import Chunk, Evidence, SearchHit

_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)", re.S)


def first_sentence(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    if not text:
        return ""
    m = _SENTENCE.match(text)
    s = m.group(1) if m else text
    return s if len(s) <= limit else s[:limit].rsplit(" ", 1)[0] + " …"


def describe(c: Chunk) -> str:
    """A one-line description of a chunk, from the best source it has."""
    if c.explanation:
        return first_sentence(c.explanation)
    if c.kind in ("file", "module", "call_chain"):
        lines = [ln for ln in c.text.splitlines() if ln.strip()]
        body = " ".join(lines[1:3]) if len(lines) > 1 else (lines[0] if lines else "")
        return first_sentence(body, 240)
    if c.comment:
        return first_sentence(c.comment)
    if c.kind == "doc_section":
        body = c.text.split("\n", 1)[-1]
        return first_sentence(body) or " > ".join(c.heading_path)
    if c.signature:
        return c.signature[:200]
    if c.members:
        return f"{c.kind} with members " + ", ".join(c.members[:6])
    return first_sentence(c.text)


def symbol_of(c: Chunk) -> str:
    return c.qualified_name or c.name or c.path


def to_evidence(hit: SearchHit) -> Evidence:
    c = hit.chunk
    return Evidence(path=c.path, start_line=c.start_line, end_line=c.end_line,
                    symbol=symbol_of(c), kind=c.kind, score=hit.score, chunk_id=c.id,
                    description=describe(c), why=hit.why, evidence_class=hit.evidence_class)


def extractive_answer(hits: list[SearchHit]) -> str:
    if not hits:
        return "The index holds nothing that matches this question."
    best = hits[0].chunk
    where = f"{best.path}:{best.start_line}-{best.end_line}"
    desc = describe(best)
    lead = f"The best match is {best.kind} {symbol_of(best)} in {where}"
    lead += f": {desc}" if desc else "."
    others = [f"{h.chunk.kind} {symbol_of(h.chunk)} ({h.chunk.path}:{h.chunk.start_line})"
              for h in hits[1:4]]
    if others:
        lead += " Related: " + "; ".join(others) + "."
    return lead
