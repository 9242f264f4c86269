"""Final-context filter: score how much each selected chunk tells a reader, and drop a weak
chunk only when a stronger chunk from the same place already carries its content. (The answer
model's token budget is fitted where the prompt is built: answer/llm.build_context.)
"""
from __future__ import annotations

from ..contracts.models import Chunk
from ..contracts.settings.retrieval import ContextFilterSettings
from .rerank import low_signal

ENTITY = {"file", "module", "call_chain"}


def information(c: Chunk, trivial_lines: int = 2) -> float:
    """0..1: explanation, comments, references, entity level and substantive code count."""
    score = 0.0
    if c.explanation:
        score += 0.3
    if c.comment:
        score += 0.2
    if c.calls or c.bases or c.members:
        score += 0.15 * min(1.0, (len(c.calls) + len(c.bases) + len(c.members)) / 3)
    if c.kind in ENTITY:
        score += 0.35
    elif c.kind in ("doc_section", "build"):
        score += 0.3
    code_lines = sum(1 for ln in c.text.splitlines() if ln.strip() and not
                     ln.strip().startswith(("//", "/*", "*", "#include")))
    if code_lines >= 4 and c.kind != "declaration":
        score += 0.3
    if low_signal(c, trivial_lines):
        score -= 0.3
    return max(0.0, min(1.0, score))


def _carrier(c: Chunk, stronger: list[Chunk]) -> Chunk | None:
    """A chunk in `stronger` that carries c's content (definition, owner class, enclosing)."""
    for s in stronger:
        if s.id == c.id:
            continue
        if c.qualified_name and s.qualified_name == c.qualified_name and not s.is_declaration \
                and s.kind != "declaration" and (c.kind == "declaration" or c.is_declaration):
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
    info = [information(c, trivial_lines) for c in chunks]
    kept, dropped = [], []
    for i, c in enumerate(chunks):
        if info[i] < settings.min_info:
            stronger = [chunks[j] for j in range(len(chunks)) if j != i and info[j] > info[i]]
            carrier = _carrier(c, stronger)
            if carrier is not None:
                dropped.append((i, f"carried by {carrier.qualified_name or carrier.name} "
                                   f"(info {info[i]:.2f} < {settings.min_info})"))
                continue
        kept.append(i)
    return kept, dropped
