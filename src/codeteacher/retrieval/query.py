"""Query analysis: which files, symbols and folders of *this* index a question names.

Everything is matched against the index's own file list and symbol table, never against a
word list about some codebase, so it works for any repository.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath

from pydantic import BaseModel, Field

from ..index.lexical import STOP, abbreviations, acronyms, tokenize
from ..index.store import IndexStore
from .literal import literals

# File names in a question: a run of path characters that starts with a word character and
# ends in ".ext". One regex for that ([\w][\w./+-]*\.[A-Za-z]...\b) backtracks over every
# start of a long run, quadratic in its length (a 40k-character token took 15 s and, holding
# the GIL, froze a whole server), so it is done in two linear passes: the runs, then the last
# extension inside each run.
_PATH_RUN = re.compile(r"[\w./+-]+")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}\b")
_WORD_CHAR = re.compile(r"\w")
# A call is written `name(`; prose puts a space before an aside ("a run (units, steps)").
_IDENT = re.compile(r"`([^`]+)`|([A-Za-z_~][A-Za-z0-9_]*(?:::[A-Za-z_~][A-Za-z0-9_]*)*)(\()?")
CODE_EXT = (".h", ".hh", ".hpp", ".hxx", ".cpp", ".cc", ".cxx", ".c", ".cu", ".cuh", ".hip", ".tpp",
             ".inl", ".ipp", ".tcc")


class QueryAnalysis(BaseModel):
    question: str
    tokens: list[str]
    # Short forms code writes for the question's words (`dt` for "time step"), searched
    # lexically beside the tokens at `retrieval.short_form_weight`.
    short_forms: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)  # repository paths named (with siblings)
    named_files: list[str] = Field(default_factory=list)  # the ones literally named
    stem_files: list[str] = Field(default_factory=list)  # named by stem ("runBench")
    word_files: list[str] = Field(default_factory=list)  # by a plain word ("build", "install")
    symbols: dict[str, float] = Field(default_factory=dict)  # symbol -> confidence (0..1]
    modules: list[str] = Field(default_factory=list)
    literals: list[str] = Field(default_factory=list)  # identifier-shaped words, as written
    intent: str = ""  # set by routing
    profile: str = ""  # expansion profile chosen by the intent
    wanted: list[str] = Field(default_factory=list)  # requested entity types


def file_names(text: str) -> list[str]:
    """File-name-like words of `text` ("src/foo.cpp", "CMakeLists.txt"), in linear time."""
    out = []
    for run in _PATH_RUN.finditer(text):
        first = _WORD_CHAR.search(run.group(0))
        if first is None:
            continue
        end = -1
        for m in _EXTENSION.finditer(run.group(0), first.start() + 1):
            end = m.end()
        if end > 0:
            out.append(run.group(0)[first.start():end])
    return out


def _strong_identifier(word: str, backticked: bool, called: bool) -> bool:
    """Identifier-shaped words (CamelCase, snake_case, qualified, called, quoted). An
    all-capitals word is not: prose uses acronyms ("the FFT solver") for concepts."""
    if backticked or called or "::" in word or "_" in word.strip("_"):
        return True
    return not word.isupper() and any(ch.isupper() for ch in word[1:])


@lru_cache(maxsize=20000)
def _leaf(module: str) -> str:
    return PurePosixPath(module).name.lower()


def _siblings(store: IndexStore, path: str) -> list[str]:
    pp = PurePosixPath(path)
    if pp.suffix.lower() not in CODE_EXT:
        return []
    same_dir = [p for p in store.by_stem.get(pp.stem.lower(), [])
                if p != path and PurePosixPath(p).parent == pp.parent
                and PurePosixPath(p).suffix.lower() in CODE_EXT]
    return same_dir


@lru_cache(maxsize=64)
def _kind_patterns(cue: str, qualifiers: str) -> tuple[re.Pattern, re.Pattern, frozenset]:
    return (re.compile(rf"^\s+(?:{cue})\b", re.I), re.compile(rf"\b(?:{cue})\s+$", re.I),
            frozenset(w.lower() for w in qualifiers.split()))


def _kind_named(question: str, m: re.Match, word: str, cue: str, qualifiers: str) -> bool:
    """The word stands next to a noun saying what kind of code it is ("the Grid class",
    "struct Params", "the solve function"): then it names that thing, however it is spelled,
    unless it only qualifies the noun ("the base class")."""
    if not cue:
        return False
    after, before, qual = _kind_patterns(cue, qualifiers)
    if word.lower() in qual:
        return False
    return bool(after.match(question[m.end():]) or before.search(question[:m.start()]))


def analyze(question: str, store: IndexStore, weak: float = 0.05, acronym: float = 0.1,
            weak_max_defs: int = 8, weak_min_chars: int = 5, kind_cue: str = "",
            kind_qualifiers: str = "", kind_confidence: float = 1.0,
            short_forms: dict[str, list[str]] | None = None,
            short_form_ratio: float = 0.0) -> QueryAnalysis:
    tokens = tokenize(question)
    tokens += [a for a in acronyms(question, store.lexical.vocab) if a not in tokens]
    shorts = [a for a in abbreviations(question, store.lexical.vocab, short_forms,
                                       store.lexical.df, short_form_ratio)
              if a not in tokens] if short_forms else []
    project_names = {n.lower() for n in (store.manifest.name, PurePosixPath(
        store.manifest.root).name) if n}
    qa = QueryAnalysis(question=question, tokens=tokens, short_forms=shorts, literals=[
        w for w in literals(question) if w.lower() not in project_names])
    files: list[str] = []
    for word in file_names(question):
        word = word.strip("./")
        hits = [p for p in store.manifest.files if p == word or p.endswith("/" + word)]
        if not hits:
            base = PurePosixPath(word).name
            hits = store.by_basename.get(base) or store.by_basename.get(base.lower()) or []
        for h in hits:
            if h not in qa.named_files:
                qa.named_files.append(h)
    # Extensionless files named in capitals (INSTALL, README) or exactly by base name. A
    # plain lower-case word ("how do I build", "install it") is English as often as it is a
    # file name (a script called build, INSTALL): it names the file only weakly (word_files).
    for word in re.findall(r"\b[A-Za-z][A-Za-z0-9_-]{2,}\b", question):
        if "." not in word and (word.isupper() or word in store.by_basename):
            for h in store.by_basename.get(word, []):
                if h not in qa.named_files and h not in qa.word_files:
                    (qa.word_files if word.islower() else qa.named_files).append(h)
    # A path written out (tools/build) names its file, extension or not.
    for run in _PATH_RUN.finditer(question):
        path = run.group(0).strip("./")
        if "/" in path and path in store.by_path and path not in qa.named_files:
            qa.named_files.append(path)
    qa.word_files = [p for p in qa.word_files if p not in qa.named_files]
    # An identifier-shaped word equal to a file's stem ("runBench" -> tools/runBench.py) names
    # that file too, less surely than "runBench.py" would.
    for m in re.finditer(r"\b[A-Za-z_][A-Za-z0-9_]{2,}\b", question):
        word = m.group(0)
        if _strong_identifier(word, False, False):
            for p in store.by_stem.get(word.lower(), []):
                if PurePosixPath(p).stem == word and p not in qa.named_files \
                        and p not in qa.stem_files:
                    qa.stem_files.append(p)
    for p in qa.named_files:
        files.append(p)
        files.extend(s for s in _siblings(store, p) if s not in files)
    files.extend(qa.stem_files)
    files.extend(qa.word_files)
    qa.files = list(dict.fromkeys(files))

    for m in _IDENT.finditer(question):
        quoted, word, call = m.group(1), m.group(2), m.group(3)
        word = (quoted or word or "").strip().rstrip("()")
        if not word or word.lower() in STOP or len(word) < 3:
            continue
        if "." in word and not quoted:
            continue
        if word.lower() in project_names:
            continue  # the project's own name ("build Foo") means the project, not class Foo
        candidates = [word, word.split("::")[-1]] if "::" in word else [word]
        for cand in candidates:
            defs = store.by_symbol.get(cand)
            if not defs:
                continue
            if _strong_identifier(word, bool(quoted), bool(call)):  # judged as written
                qa.symbols[cand] = max(qa.symbols.get(cand, 0.0), 1.0)
            elif _kind_named(question, m, word, kind_cue, kind_qualifiers):
                qa.symbols[cand] = max(qa.symbols.get(cand, 0.0), kind_confidence)
            elif cand.isupper() and len(cand) >= 2:
                qa.symbols[cand] = max(qa.symbols.get(cand, 0.0), acronym)
            elif len(defs) <= weak_max_defs and len(cand) >= weak_min_chars:
                # A plain lower-case word ("charge") is usually English, not a code reference.
                qa.symbols[cand] = max(qa.symbols.get(cand, 0.0), weak)
            break

    # A file path names its file, not its folder: "src/x.h" does not ask about "src/".
    lowered = question.lower()
    for p in qa.named_files:
        lowered = lowered.replace(p.lower(), " ")
    for module in store.modules:
        if not module or module == ".":
            continue
        name = _leaf(module)
        if len(name) >= 3 and ("/" in module and module.lower() in lowered or
                               re.search(rf"\b{re.escape(name)}(/|\b)", lowered) and
                               ("folder" in lowered or "module" in lowered or "directory"
                                in lowered or module.lower() + "/" in lowered)):
            qa.modules.append(module)
    return qa
