"""Exact-token channel: identifier-shaped words of the question matched literally in the index.

Code search engines treat a verbatim hit of a rare token as the strongest signal: a user who
types `ENABLE_GPU_BUILD`, `--write-restart`, `read_input_deck` or `options.cmake` means that string.
BM25 splits such words into sub-words and so also ranks files that merely share the parts.
Here each literal is looked up through the BM25 vocabulary (its longest identifier part), then
confirmed in the record's own text, case-sensitively and not; its weight is its rarity among
the repository's files, so a name that occurs in two files counts far more than one in fifty.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..contracts.models import CODE_KINDS
from ..index.store import IndexStore

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+[A-Za-z][A-Za-z0-9_]*")
_EDGE = "\"'()[]{}<>,;:?!*"
_FILE = re.compile(r"[\w+-]*\w\.[A-Za-z][A-Za-z0-9]{0,5}")
_MIXED_DIGITS = re.compile(r"[A-Za-z]+[0-9]+[A-Za-z0-9]*")
# A quoted span: the opening quote starts a word and the closing one ends it, so apostrophes
# (don't, the atoms' positions) never open one. Users quote what they saw: a message the program
# printed, a line of an input file. Bounded length, one line: no backtracking blow-up.
_QUOTED = re.compile(r"""(?:(?<=[\s(\[])|^)(["'‘“])([^"'‘’“”\n]{3,80}?)"""
                     r"""["'’”](?=[\s.,;:?!)\]]|$)""")


@dataclass
class LiteralMatch:
    literal: str
    files: int  # files where it occurs (any case)
    weight: float  # rarity in [0, 1]
    exact: dict[int, bool]  # record index -> case-sensitive match?
    shape: str = ""


def identifier_shape(word: str) -> str | None:
    """The shape of an identifier-like word, or None for a plain English word."""
    if word.startswith("--") and len(word) > 3 and _WORD.fullmatch(word[2:].replace("-", "_")):
        return "flag"
    if "::" in word:
        return "qualified"
    if "." in word:
        return "file" if _FILE.fullmatch(word) and len(word.split(".")[0]) > 1 else None
    if not _WORD.fullmatch(word) or len(word) < 3:
        return None
    if "_" in word.strip("_"):
        return "snake"
    if word.isupper() and any(ch.isalpha() for ch in word):
        return "caps"
    if any(a.islower() and b.isupper() for a, b in zip(word, word[1:])):
        return "camel"
    if word[0].isupper() and sum(ch.isupper() for ch in word) >= 2:
        return "camel"
    if _MIXED_DIGITS.fullmatch(word):
        return "digits"
    return None


def literals(question: str) -> list[str]:
    """Identifier-shaped words of the question, as written; backticked text and quoted text
    of more than one word (a printed message, an input line) always count. Splits on backticks
    and white space and strips punctuation: linear in the length."""
    out: list[str] = []
    seen: set[str] = set()
    for m in _QUOTED.finditer(question):
        span = m.group(2).strip()
        # One quoted word is emphasis ('owner' atoms); its shape decides, as for any word.
        if " " in span and span not in seen and any(ch.isalpha() for ch in span):
            seen.add(span)
            out.append(span)
    parts = question.split("`")
    ticks = len(parts) - 1  # counted once: recounting per part was quadratic in backticks
    for n, part in enumerate(parts):
        quoted = n % 2 == 1 and n < ticks
        for word in ([part.strip()] if quoted else part.split()):
            if not quoted:
                word = word.strip(_EDGE).rstrip(".").strip(_EDGE)
            if word.endswith("()"):
                word = word[:-2]
            if len(word) >= 2 and word not in seen and (quoted or identifier_shape(word)):
                seen.add(word)
                out.append(word)
    return out


def _key(literal: str) -> str | None:
    """The BM25 token to find candidate records: the literal's longest identifier run."""
    words = _WORD.findall(literal)
    return max(words, key=len).lower().strip("_") if words else None


def _haystack(store: IndexStore, i: int) -> str:
    r = store.records[i]
    return f"{r.path}\n{r.qualified_name}\n{r.signature}\n{r.comment}\n{r.text}"


def _file_hits(store: IndexStore, key: str, lit: str, limit: int,
               max_bytes: int | None = None) -> dict[str, bool]:
    """Files (via the whole-file BM25 vocabulary) whose text holds the literal: path -> same
    case? Skipped when the key token is in more than `limit` files."""
    files = store.lexical.files
    if files is None:
        return {}
    rows = np.flatnonzero(files.scores([key]))
    if len(rows) > limit:
        return {}
    out: dict[str, bool] = {}
    for j in rows:
        path = files.paths[int(j)]
        text = store.repo_text(path, max_bytes)
        if text is None:  # moved or refused since indexing: the records still answer
            continue
        if lit in text:
            out[path] = True
        elif lit.lower() in text.lower():
            out[path] = False
    return out


def match_literals(store: IndexStore, words: list[str], max_files: int,
                   max_records: int, acronym_factor: float = 1.0, max_share: float = 1.0,
                   max_bytes: int | None = None) -> list[LiteralMatch]:
    """Records that contain each literal verbatim; literals in more than `max_files` files,
    or in more than `max_share` of all files (common words of the code), are dropped."""
    n_files = max(2, len(store.manifest.files))
    out = []
    for lit in words:
        key = _key(lit)
        files_ix = store.lexical.files
        if not key or (key not in store.lexical.vocab
                       and (files_ix is None or key not in files_ix.index.vocab)):
            continue
        docs = np.flatnonzero(store.lexical.scores([key]))
        if len(docs) > max_records:
            continue
        low = lit.lower()
        exact: dict[int, bool] = {}
        for i in docs:
            hay = _haystack(store, int(i))
            if lit in hay:
                exact[int(i)] = True
            elif low in hay.lower():
                exact[int(i)] = False
        files = {store.records[i].path for i in exact if store.records[i].kind != "module"}
        # Whole files too: top-level text (macros, options, includes) is in no chunk.
        for path, same_case in _file_hits(store, key, lit, 4 * max_files, max_bytes).items():
            files.add(path)
            fi = store.file_record_index(path)
            if fi is not None:
                exact[fi] = exact.get(fi, False) or same_case
        if not files or len(files) > min(max_files, max(2.0, max_share * n_files)):
            continue
        # Squared normalised IDF: one file 1.0, a few files ~0.7, a tenth of them ~0.25.
        weight = (math.log(n_files / len(files)) / math.log(n_files)) ** 2 if len(files) > 1 \
            else 1.0
        shape = identifier_shape(lit) or "quoted"
        if shape == "caps":  # prose uses acronyms for concepts (GPU, MPI), not only names
            weight *= acronym_factor
        out.append(LiteralMatch(lit, len(files), round(weight, 3), exact, shape))
    return out


# Numbers a question quotes ("the 0.95 factor", "values 26 and -1") are constants of the code:
# decimals, integers of two digits or more, exponent forms; not "64-bit" or "3-D" (an
# adjective) and not part of a word. In code a number may carry a fraction (26.0), an exponent
# or a type suffix (0.5f); all are compared as floats.
_QUESTION_NUMBER = re.compile(r"(?<![\w.])((?:\d+\.\d+|\d{2,}|\d+[eE]-?\d+))(?![\w]|-[A-Za-z])")
_CODE_NUMBER = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)[fFlLuU]?"
                          r"(?![\w.])")


def _number_key(text: str) -> str | None:
    try:
        return repr(float(text))
    except (ValueError, OverflowError):
        return None


def numbers(question: str) -> list[str]:
    """Numeric constants the question quotes, as written, each once."""
    return list(dict.fromkeys(_QUESTION_NUMBER.findall(question)))


def _number_index(store: IndexStore, languages: frozenset[str]) -> dict[str, list[int]]:
    """number (as a float's repr) -> code records holding it (parsed code, and scripts in
    `languages`: a page's dates and a changelog's versions are no constants); built on first
    use (a fraction of a second for thousands of records) and kept with the loaded index."""
    cache = store.memo("numbers")
    if languages not in cache:
        index: dict[str, list[int]] = {}
        for i, r in enumerate(store.records):
            if r.kind not in CODE_KINDS and not (r.kind == "script" and r.language in languages):
                continue
            for key in {_number_key(m) for m in _CODE_NUMBER.findall(r.text)}:
                if key is not None:
                    index.setdefault(key, []).append(i)
        cache[languages] = index
    return cache[languages]


def match_numbers(store: IndexStore, quoted: list[str], max_files: int,
                  max_share: float = 1.0, languages: frozenset[str] = frozenset()
                  ) -> list[LiteralMatch]:
    """Records that hold each quoted number; numbers in many files (1, 10, 100) are dropped
    as literals are, and the rest weighted by their rarity the same way."""
    n_files = max(2, len(store.manifest.files))
    index = _number_index(store, languages)
    out = []
    for number in quoted:
        key = _number_key(number)
        hits = index.get(key, []) if key else []
        files = {store.records[i].path for i in hits}
        if not files or len(files) > min(max_files, max(2.0, max_share * n_files)):
            continue
        weight = (math.log(n_files / len(files)) / math.log(n_files)) ** 2 if len(files) > 1 \
            else 1.0
        exact = {i: True for i in hits}
        for path in files:
            fi = store.file_record_index(path)
            if fi is not None:
                exact[fi] = True
        out.append(LiteralMatch(number, len(files), round(weight, 3), exact, "number"))
    return out
