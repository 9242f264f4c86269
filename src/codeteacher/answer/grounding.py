"""Hallucination guard: names of files and code symbols in generated prose that the context the
model was shown does not hold.

Only code-shaped words are checked (file names with an extension, `::`-qualified names,
snake_case, CamelCase with an inner capital, calls written `name(`, backticked words), so plain
English never counts. A name is supported when the context or the question contains it, or,
for a qualified name or a path, its last component.
"""
from __future__ import annotations

import re

_FILE = re.compile(r"(?<![\w/.-])((?:[\w.+-]+/)*[\w+-]+\.(?:[A-Za-z][A-Za-z0-9]{0,4}))(?![\w(])")
_TICK = re.compile(r"`([^`\n]{2,80})`")
_IDENT = re.compile(r"(?<![\w:.])((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)(\()?")
_NOT_FILES = {"e.g", "i.e", "etc", "vs", "std"}


def _code_shaped(word: str, called: bool) -> bool:
    core = word.split("::")[-1].lstrip("~")
    if "::" in word or "_" in core.strip("_"):
        return True
    if called and len(core) > 2:
        return True
    return any(ch.isupper() for ch in core[1:]) and not core.isupper()


def names_in(prose: str) -> list[str]:
    """File and symbol names written in prose, in order of first mention."""
    out: dict[str, None] = {}
    for m in _TICK.finditer(prose):
        word = m.group(1).strip().rstrip("()")
        if re.fullmatch(r"[\w:~./+-]+", word):
            out.setdefault(word)
    rest = _TICK.sub(" ", prose)
    for m in _FILE.finditer(rest):
        name = m.group(1)
        stem, _, ext = name.rpartition(".")
        if stem.lower() in _NOT_FILES or ext.isdigit() or stem.replace(".", "").isdigit():
            continue
        if "/" in name or ext.lower() in {"h", "hh", "hpp", "hxx", "c", "cc", "cpp", "cxx",
                                          "cu", "cuh", "py", "md", "txt", "cmake", "json",
                                          "yaml", "yml", "sh", "rst", "tex", "f90", "inl", "tpp"}:
            out.setdefault(name)
    rest = _FILE.sub(" ", rest)
    for m in _IDENT.finditer(rest):
        word, called = m.group(1), bool(m.group(2))
        if _code_shaped(word, called):
            out.setdefault(word)
    return list(out)


def unsupported_names(prose: str, known: str) -> list[str]:
    """Names in `prose` that `known` (the context shown plus the question) does not contain."""
    if not prose:
        return []
    missing = []
    for name in names_in(prose):
        tail = re.split(r"::|/", name)[-1].lstrip("~")
        if name in known or (tail and re.search(rf"(?<!\w){re.escape(tail)}(?!\w)", known)):
            continue
        missing.append(name)
    return missing
