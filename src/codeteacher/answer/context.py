"""The answer prompt's context: the most informative lines of each retrieved chunk.

A small model reads a few hundred tokens per second at best, so every context token has to earn
its place. Instead of the first N characters of a chunk, an item shows its location and name,
its signature, the first sentences of its comment (markup stripped) or explanation, and the
body statements that do the work: lines naming the question's words, assignments, returns and
calls, in source order, with `…` where lines were left out. Braces, includes, blank and
comment-only lines, and logging are left out first.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from ..contracts.models import Chunk, SearchHit
from .text import first_sentences, strip_markup

GAP = "  …"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SKIP = re.compile(r"^\s*(?:[{}();]*\s*$|#\s*(?:include|pragma|if|ifn?def|endif|else|elif|"
                   r"define\s+\w+_H\w*)\b|using\s|namespace\b|(?:public|private|protected)\s*:|"
                   r"//|/\*|\*|template\s*<[^>]*>\s*$)")
_LOGGING = re.compile(r"\b(?:std::)?(?:cout|cerr|printf|fprintf|puts|std::endl|log\w*|"
                      r"print\w*|assert\w*|PAssert\w*|static_assert)\b")
_WORK = re.compile(r"(?<![=!<>])=(?!=)|\breturn\b|\+=|-=|\*=|/=|\w\s*\(")
_MATH = re.compile(r"[-+*/]\s*[\w(]")
MAX_LINE = 110


def words(text: str) -> set[str]:
    """Lowercased word pieces: identifiers and their snake/camel parts."""
    out: set[str] = set()
    for w in _WORD.findall(text):
        low = w.lower()
        out.add(low)
        for piece in re.split(r"_+", w):
            out.update(p.lower() for p in _CAMEL.findall(piece) if len(p) > 2)
    return out


def _line_score(line: str, terms: set[str], calls: set[str]) -> float:
    if _LOGGING.search(line) or line.startswith(("throw ", "msg <<")):
        return -9.0  # reporting, not working
    s = 0.0
    hits = len(words(line) & terms)
    s += 2.0 * hits
    if _WORK.search(line):
        s += 1.0
    if _MATH.search(line):
        s += 0.5
    if "//" in line:  # an inline comment explains the statement
        s += 0.5
    if calls and any(f"{c}(" in line or f"{c} (" in line for c in calls):
        s += 1.5  # the calls a function makes tell its story
    return s


def body_lines(c: Chunk, terms: set[str], limit: int) -> list[str]:
    """Up to `limit` of the chunk's most informative code lines, in source order."""
    lines = c.text.splitlines()
    sig_words = c.signature.split("(")[0].split() if c.signature else []
    start = 0
    if c.signature and sig_words:  # the signature is shown on its own
        for i, ln in enumerate(lines[:12]):
            if sig_words[-1] in ln:
                start = i + 1
                break
    calls = {n.split('::')[-1] for n in c.calls}
    scored, seen = [], set()
    for i, ln in enumerate(lines[start:], start):
        st = ln.strip()
        if len(st) < 3 or _SKIP.match(st) or st in seen:
            continue
        seen.add(st)
        score = _line_score(st, terms, calls)
        if score > -9:
            scored.append((score, i, st))
    best = sorted(scored, key=lambda t: (-t[0], t[1]))[:limit]
    out, last = [], None
    for _, i, st in sorted(best, key=lambda t: t[1]):
        if last is not None and i > last + 1:
            out.append(GAP)
        out.append("  " + (st if len(st) <= MAX_LINE else st[:MAX_LINE] + " …"))
        last = i
    return out


def describe_text(c: Chunk, limit: int = 240, sentences: int = 2) -> str:
    """What the chunk's own words say: explanation, else comment, else doc text."""
    if c.explanation:
        return first_sentences(strip_markup(c.explanation), limit, sentences)
    if c.comment:
        return first_sentences(strip_markup(c.comment), limit, sentences)
    if c.kind == "doc_section":
        return first_sentences(strip_markup(c.text.split("\n", 1)[-1]), limit, sentences)
    if c.kind in ("file", "module", "call_chain"):
        body = [ln for ln in c.text.splitlines()[1:] if ln.strip()]
        return first_sentences(strip_markup(" ".join(body[:3])), limit, sentences)
    return ""


def item_text(n: int, hit: SearchHit, terms: set[str], code_lines: int) -> str:
    c = hit.chunk
    name = c.qualified_name or c.name
    head = f"[{n}] {c.path} lines {c.start_line}-{c.end_line}, {c.kind}"
    head += f" {name}" if name and name != c.path else ""
    lines = [head]
    desc = describe_text(c)
    if desc:
        lines.append(f"Says: {desc}")
    if c.signature and c.kind not in ("doc_section", "file", "module"):
        lines.append("  " + " ".join(c.signature.split())[:160])
    if c.kind not in ("doc_section", "file", "module", "call_chain") and code_lines > 0:
        lines += body_lines(c, terms, code_lines)
    elif c.kind in ("file", "module", "call_chain") and code_lines > 0:
        # Entity texts are summaries (header comment, symbols, includes): show their lines.
        body = [ln.strip() for ln in c.text.splitlines()[1:] if ln.strip()]
        lines += ["  " + (ln if len(ln) <= MAX_LINE * 2 else ln[:MAX_LINE * 2] + " …")
                  for ln in body[:max(2, code_lines // 2)] if strip_markup(ln) not in desc]
    return "\n".join(lines)


def build_context(hits: list[SearchHit], question: str, count: Callable[[str], int],
                  budget: int, max_items: int, code_lines: int, max_chars: int = 1800
                  ) -> tuple[str, int, bool]:
    """(context text, items included, whether an item was shortened) within `budget` tokens."""
    terms = words(question)
    blocks, used, cut = [], 0, False
    for n, hit in enumerate(hits[:max_items], 1):
        lines = code_lines
        block = item_text(n, hit, terms, lines)[:max_chars]
        need = count(block) + 2
        while used + need > budget and lines > 2:  # fewer code lines before giving up
            lines = lines // 2
            block, cut = item_text(n, hit, terms, lines)[:max_chars], True
            need = count(block) + 2
        if used + need > budget:
            if blocks:
                cut = True
                break
            block = block[: max(200, int(len(block) * budget / max(need, 1)))]
            need, cut = count(block) + 2, True
        blocks.append(block)
        used += need
    return "\n\n".join(blocks), len(blocks), cut
