"""Final-context filter: score how much each selected chunk tells a reader, and drop a weak
chunk only when a stronger chunk from the same place already carries its content. (The answer
model's token budget is fitted where the prompt is built: answer/llm.build_context.)
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

from ..contracts.models import Chunk
from ..contracts.settings.retrieval import ContextFilterSettings, InformationWeights
from .rerank import low_signal

ENTITY = {"file", "module", "call_chain"}


@lru_cache(maxsize=50000)  # per text: the same chunks come back query after query
def _code_lines(text: str) -> int:
    return sum(1 for ln in text.splitlines() if ln.strip() and not
               ln.strip().startswith(("//", "/*", "*", "#include")))


def information(c: Chunk, trivial_lines: int = 2, w: InformationWeights | None = None) -> float:
    """0..1: explanation, comments, references, entity level and substantive code count."""
    w = w or InformationWeights()
    score = 0.0
    if c.explanation:
        score += w.explanation
    if c.comment:
        score += w.comment
    if c.calls or c.bases or c.members:
        score += w.references * min(1.0, (len(c.calls) + len(c.bases) + len(c.members))
                                    / w.references_full)
    if c.kind in ENTITY:
        score += w.entity
    elif c.kind in ("doc_section", "build"):
        score += w.text
    if _code_lines(c.text) >= w.code_lines and c.kind != "declaration":
        score += w.code
    if low_signal(c, trivial_lines):
        score += w.low_signal
    return max(0.0, min(1.0, score))


def _defines(s: Chunk, c: Chunk) -> bool:
    """`s` is the definition of what the declaration `c` declares (a header's prototype)."""
    return bool(c.qualified_name) and s.qualified_name == c.qualified_name \
        and not s.is_declaration and s.kind != "declaration" \
        and (c.kind == "declaration" or c.is_declaration)


def _carrier(c: Chunk, stronger: list[Chunk]) -> Chunk | None:
    """A chunk in `stronger` that carries c's content (definition, owner class, enclosing)."""
    for s in stronger:
        if s.id == c.id:
            continue
        if _defines(s, c):
            return s  # the definition carries its declaration
        if c.class_name and s.kind in ("class", "struct", "union") and s.name == c.class_name \
                and any(c.name in m for m in s.members):
            return s  # the class chunk lists this member
        if s.path == c.path and s.kind not in ENTITY and s.start_line <= c.start_line \
                and c.end_line <= s.end_line:
            return s  # enclosed by a chunk already shown
        if c.parent_id and s.id == c.parent_id:
            return s
    return None


def filter_context(chunks: list[Chunk], settings: ContextFilterSettings, trivial_lines: int = 2
                   ) -> tuple[list[int], list[tuple[int, str]]]:
    """Indices of chunks kept (in order) and (index, reason) of those dropped."""
    info = [information(c, trivial_lines, settings.information) for c in chunks]
    per_file = Counter(c.path for c in chunks)
    kept, dropped = [], []
    for i, c in enumerate(chunks):
        if info[i] < settings.min_info:
            stronger = [chunks[j] for j in range(len(chunks)) if j != i and info[j] > info[i]]
            carrier = _carrier(c, stronger)
            if carrier is not None and settings.keep_files and carrier.path != c.path \
                    and per_file[c.path] == 1 and (not low_signal(c, trivial_lines) or (
                        settings.keep_declaring_files and _defines(carrier, c)
                        and chunks.index(carrier) < settings.declaring_within)):
                carrier = None  # the only item of its file: the file would leave the evidence
            if carrier is not None:
                dropped.append((i, f"carried by {carrier.qualified_name or carrier.name} "
                                   f"(info {info[i]:.2f} < {settings.min_info})"))
                continue
        kept.append(i)
    return kept, dropped
