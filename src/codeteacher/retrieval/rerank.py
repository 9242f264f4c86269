"""Metadata reranker (and the optional cross-encoder) over fused retrieval candidates.

Features are generic facts about a chunk (its name, path, kind, scope, comments, calls) set
against the question's words and routed intent; weights and their reasons are in
`retrieval_settings.RerankWeights`.
"""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import PurePosixPath

from ..contracts.models import Chunk
from ..contracts.settings.retrieval import (
    CrossEncoderSettings,
    IntentRule,
    RerankSettings,
)
from ..index.lexical import STOP, split_identifier, tokenize
from ..index.lexical import stem as light_stem
from .routing import cue_pattern

HEADER_EXT = {".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".tpp", ".ipp"}
SOURCE_EXT = {".c", ".cc", ".cpp", ".cxx", ".cu", ".hip"}
ENTITY_KINDS_FOR = {
    "function": {"function", "method", "constructor", "destructor", "operator", "function_part"},
    "class": {"class", "struct", "union", "enum"},
    "file": {"file"},
    "module": {"module"},
    "call_chain": {"call_chain"},
    "documentation": {"doc_section"},
    "build": {"build"},
    "test": set(),
}
CODE = {"function", "method", "constructor", "destructor", "operator", "function_part", "class",
        "struct", "union", "enum", "declaration", "macro", "typedef"}


_OPERATOR = re.compile(r"\boperator\b\s*(?=[^\w\s]|$)")


@lru_cache(maxsize=20000)
def _name_parts(name: str) -> frozenset[str]:
    # `operator+` is named by its symbol: the keyword is not the word "operator" of a question
    # ("the heat-conduction operator").
    name = _OPERATOR.sub(" ", name)
    stem = PurePosixPath(name).stem if "." in name and " " not in name else name
    parts = set()
    for word in stem.replace("::", " ").replace("/", " ").split():
        parts.update(light_stem(p) for p in split_identifier(word) if len(p) > 1 and p not in STOP)
    return frozenset(parts)


@lru_cache(maxsize=50000)
def _file_name_parts(path: str) -> frozenset[str]:
    return _name_parts(PurePosixPath(path).name)


@lru_cache(maxsize=50000)
def _suffix(path: str) -> str:
    return PurePosixPath(path).suffix.lower()


@lru_cache(maxsize=20000)
def _path_parts(path: str) -> frozenset[str]:
    return frozenset(tokenize(path.replace("/", " ").replace(".", " ")))


@lru_cache(maxsize=50000)
def component(path: str) -> str:
    """A header and its implementation file (same folder and stem) are one unit."""
    p = PurePosixPath(path)
    return str(p.with_suffix("")) if p.suffix.lower() in HEADER_EXT | SOURCE_EXT else path


def low_signal(c: Chunk, trivial_lines: int) -> bool:
    if c.kind == "declaration" or c.is_declaration:
        return True
    if c.kind in CODE and not c.comment and not c.explanation:
        if c.end_line - c.start_line + 1 <= trivial_lines:
            return True
        if c.kind in ("class", "struct") and not c.members:
            return True  # forward declaration or empty tag
    return _mostly_includes(c.text)


@lru_cache(maxsize=50000)
def _mostly_includes(text: str) -> bool:
    # Cached per text: the same chunks come back query after query (a warm-latency hot spot).
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return bool(lines) and sum(ln.lstrip().startswith("#include") for ln in lines) > 0.6 * len(lines)


def _owner_and_name(c: Chunk) -> str:
    """Name parts that identify a chunk: its name plus its class (for members)."""
    base = c.name or c.path
    return f"{c.class_name} {base}" if c.class_name and c.class_name != c.name else base


@lru_cache(maxsize=50000)
def _is_metadata(path: str, names: frozenset[str]) -> bool:
    """The file is named by one of `names`, alone or before a separator: LICENSE, LICENSE.md,
    LICENSE_PROJECT, CODE_OF_CONDUCT.md. Code files never are (history_buffer.h, changes.c)."""
    pp = PurePosixPath(path)
    if pp.suffix.lower() in HEADER_EXT | SOURCE_EXT:
        return False
    name = pp.name.lower()
    return any(name == m or (name.startswith(m) and name[len(m)] in "._-") for m in names)


def third_party_roots(paths, markers: frozenset[str], text_of=None,
                      own_parts: bool = True) -> tuple[str, ...]:
    """Folders below the root that hold a licence file (`markers`) and a README of their own,
    as a project's front page does: another project's copy kept inside this one (a licence
    page alone may be part of this project's docs). Each is returned with a trailing slash.

    A licensed folder is still this project's own part (a repository of separately released
    ports or tools) when it holds most of the code, when its licence is the root's licence
    word for word (`text_of(path)` gives a file's text), or when most of its code file names
    recur in code outside every licensed folder: a port of the same program, not a library."""
    licensed, readme, licence_of = set(), set(), {}
    for path in paths:
        pp = PurePosixPath(path)
        if len(pp.parts) < 2:
            continue
        if _is_metadata(path, markers):
            licensed.add(root := str(pp.parent) + "/")
            licence_of.setdefault(root, path)
        elif _is_metadata(path, frozenset({"readme"})):
            readme.add(str(pp.parent) + "/")
    roots = sorted(licensed & readme)
    if not roots or not own_parts:
        return tuple(roots)
    code = [p for p in paths if _suffix(p) in HEADER_EXT | SOURCE_EXT]
    outside = {PurePosixPath(p).name for p in code if not p.startswith(tuple(roots))}
    words = lambda path: " ".join((text_of(path) or "").split()) if text_of else ""  # noqa: E731
    root_licences = {w for p in paths if "/" not in p and _is_metadata(p, markers)
                     if (w := words(p))}

    def own(root: str) -> bool:
        inside = [PurePosixPath(p).name for p in code if p.startswith(root)]
        return (2 * len(inside) >= len(code) > 0
                or words(licence_of[root]) in root_licences
                or 2 * sum(n in outside for n in inside) > len(inside) > 0)

    return tuple(r for r in roots if not own(r))


# "Copyright (c) 2008-2020 The Khronos Group Inc." -> the holder; a licence's own wording
# ("Licensed under", "Permission is hereby granted") makes it a notice, not a mention.
_COPYRIGHT = re.compile(r"copyright\s*(?:\(c\)|\u00a9)?\s*(?:\d{4}(?:\s*[-,]\s*\d{2,4})*,?\s+)+"
                        r"(?:by\s+)?([A-Za-z][\w .&'-]{2,60})", re.I)
_LICENCE_WORDS = re.compile(r"licen[cs]ed under|permission is hereby granted|redistribution and "
                            r"use|gnu (lesser )?general public", re.I)


def _holder(head: str, notice: bool = True) -> str | None:
    """The copyright holder named at the top of a file, normalised (its first three words);
    with `notice`, only in a licence notice."""
    m = _COPYRIGHT.search(head)
    if not m or notice and not _LICENCE_WORDS.search(head):
        return None
    return " ".join(re.findall(r"[a-z0-9]+", m.group(1).lower())[:3]) or None


def foreign_notice_roots(paths, head_of, markers: frozenset[str] = frozenset(),
                         min_files: int = 2) -> tuple[str, ...]:
    """Folders below the root most of whose code files carry a licence notice of a holder that
    no code file outside the folder names, nor the root's licence file (`markers`): another
    project's files copied in without their licence file (vendored API headers), also a
    folder of one such file (a single-header library). A folder with most of the code is the
    project's own. `head_of(path)` gives a file's first lines."""
    holders: dict[str, str | None] = {}
    own: set[str] = set()
    for path in paths:
        pp = PurePosixPath(path)
        if len(pp.parts) == 1 and _is_metadata(path, markers):
            if (h := _holder(head_of(path) or "", notice=False)):
                own.add(h)
        elif len(pp.parts) >= 2 and pp.suffix.lower() in HEADER_EXT | SOURCE_EXT:
            holders[path] = _holder(head_of(path) or "")
    by_folder: dict[str, list[str]] = {}
    for path in holders:
        by_folder.setdefault(str(PurePosixPath(path).parent), []).append(path)
    named_in: dict[str, set[str]] = {}
    for path, h in holders.items():
        if h:
            named_in.setdefault(h, set()).add(str(PurePosixPath(path).parent))
    roots = []
    for folder, files in sorted(by_folder.items()):
        foreign = [f for f in files if holders[f] and holders[f] not in own
                   and named_in[holders[f]] == {folder}]
        # A folder of one file with such a notice is a vendored single-header library;
        # one noticed file among others of the folder is no copy.
        alone = len(files) == len(foreign) == 1
        if (len(foreign) >= min_files or alone) and 2 * len(foreign) >= len(files) \
                and 2 * len(files) <= len(holders):
            roots.append(folder + "/")
    return tuple(roots)


def features(c: Chunk, qset: set[str], rule: IntentRule | None, intent: str,
             wanted: list[str], same_file: int, trivial_lines: int, idf,
             flow_min_calls: int = 3, support_cap: int = 3,
             metadata: frozenset[str] = frozenset(), options=None,
             option_min_lines: int = 3,
             third_party=None, other_tools: frozenset[str] = frozenset(),
             off_scopes: tuple[str, ...] = (),
             output_words: frozenset[str] = frozenset(),
             driver=None) -> dict[str, float]:
    """Named facts about one candidate; `metadata` holds the project-metadata file names
    (licence, changelog) when the question does not ask about them; `off_scopes` the scopes
    (rerank.off_scopes) ranked down unless the question is about them; `output_words` the
    stemmed words that mark a file name as output code (rerank.output_words) when the
    question does not ask about output; `driver(c)` is true for a chunk of a file that holds
    the program's entry point in a scope where that exempts it (rerank.driver_scopes)."""
    f: dict[str, float] = {}
    q_mass = sum(idf(t) for t in qset) or 1.0
    parts = _name_parts(_owner_and_name(c))
    matched = parts & qset
    if matched:
        # Rare words count more than common ones: "tridiagonal" says more than "solver".
        m = sum(idf(p) for p in matched)
        precision = m / sum(idf(p) for p in parts)
        coverage = min(1.0, m / q_mass)
        f["name_match"] = round((precision * coverage) ** 0.5, 3)
    path_hit = _path_parts(c.path) & qset
    if path_hit:
        f["path_match"] = round(min(1.0, sum(idf(t) for t in path_hit) / q_mass), 3)
    kinds = set(rule.prefer_kinds) if rule else set()
    for w in wanted:
        kinds |= ENTITY_KINDS_FOR.get(w, set())
    if c.kind in kinds or (c.scope == "build" and "build" in kinds):
        # (A build script by purpose, build.sh or configure, is a build file in a program
        # language: `collect.build_script_pattern`.)
        f["level_match"] = 1.0
    if c.comment or c.explanation:
        f["documented"] = 1.0
    if same_file:
        f["file_support"] = float(min(support_cap, same_file))
    if rule and rule.flow_cue and (c.kind == "call_chain" or len(c.calls) >= flow_min_calls):
        f["flow_cue"] = 1.0
    if rule and rule.api_cue and _suffix(c.path) in HEADER_EXT and c.comment:
        f["api_cue"] = 1.0
    if low_signal(c, trivial_lines):
        f["low_signal"] = 1.0
    allowed = set(rule.allow_scopes) if rule else set()
    if "test" in wanted:
        allowed.add("test")
    if "build" in wanted:
        allowed.add("build")
    if c.scope == "generated":  # a configure script, Makefile.in, lock file a tool wrote
        f["generated"] = 1.0
    elif c.scope in off_scopes and c.scope not in allowed and not (driver and driver(c)):
        f["off_scope"] = 1.0
    if metadata and _is_metadata(c.path, metadata):
        f["project_metadata"] = 1.0
    if third_party is not None and third_party(c.path):
        f["third_party"] = 1.0
    if c.language in other_tools:  # only build files have a build tool's language
        f["other_build_tool"] = 1.0
    if options is not None and c.kind in CODE and _count(options, c.text) >= option_min_lines:
        f["option_code"] = 1.0
    # By file name only: a symbol named print_help or write_restart sits in a driver that
    # answers other questions too (ranking those down cost a held-aside corpus @10).
    if output_words and _file_name_parts(c.path) & output_words:
        f["output_code"] = 1.0
    return f


@lru_cache(maxsize=50000)
def _count(pattern: re.Pattern, text: str) -> int:
    return len(pattern.findall(text))


def rerank(cands: list, records: list[Chunk], question_tokens: list[str],
           rule: IntentRule | None, intent: str, wanted: list[str],
           settings: RerankSettings, idf=lambda t: 1.0,
           third_party_roots: tuple[str, ...] = (),
           entry_files: frozenset[str] = frozenset()) -> None:
    """Adjust `score` of the first `top_n` candidates in place; record features in `why`.
    `third_party_roots` are folders (with a trailing slash) that hold another project's copy;
    `entry_files` the files that hold a program's entry point (a `main`)."""
    top = cands[: settings.top_n]
    qset = {light_stem(t) for t in question_tokens if t not in STOP}
    # Support is counted per component: a header and its implementation file (same folder and
    # stem, e.g. X.h / X.hpp / X.cpp) are one unit of C++ code.
    per_file = Counter(component(records[c.idx].path) for c in top)
    w = settings.weights.model_dump()
    memo: dict[str, float] = {}
    asked = " ".join(question_tokens)
    # Licence and changelog files answer questions about the project, not about its code.
    asks_metadata = cue_pattern(settings.metadata_cue).search(asked)
    metadata = frozenset() if asks_metadata else frozenset(settings.metadata_files)
    options = None
    if settings.weights.option_code and intent not in settings.option_skip_intents \
            and cue_pattern(settings.option_cue).search(asked):
        options = cue_pattern(settings.option_constructs)

    # Another project's copy is off topic unless the question names its folder.
    roots = tuple(r for r in third_party_roots
                  if not _path_parts(PurePosixPath(r).name) & set(question_tokens))
    third_party = (lambda path: path.startswith(roots)) if roots and w["third_party"] else None

    # A question that names its build tool ("with CMake", "the GNU Make build") is not
    # answered by the other tool's files.
    named_tools = {lang for lang, cue in settings.build_tool_cues.items()
                   if cue_pattern(cue).search(asked)} if w["other_build_tool"] else set()
    other_tools = frozenset(set(settings.build_tool_cues) - named_tools) if named_tools \
        else frozenset()

    def idf_memo(t: str) -> float:  # the same words are weighed for every candidate
        if t not in memo:
            memo[t] = idf(t)
        return memo[t]

    # Code that writes results (a dump, a visualisation file) names every field of the run, so
    # it matches many questions by vocabulary; it answers those about output.
    asks_output = cue_pattern(settings.output_cue).search(asked)
    output_words = _stems(tuple(settings.output_words)) if w["output_code"] and not asks_output \
        else frozenset()

    # An example folder may hold the program's own driver: its main is no off-scope example.
    scopes = frozenset(settings.driver_scopes)
    driver = (lambda r: r.scope in scopes and r.path in entry_files) if scopes and entry_files \
        else None
    for c in top:
        r = records[c.idx]
        feats = features(r, qset, rule, intent, wanted, per_file[component(r.path)] - 1,
                         settings.trivial_lines, idf_memo, settings.flow_min_calls,
                         settings.file_support_cap, metadata, options,
                         settings.option_min_lines, third_party, other_tools,
                         tuple(settings.off_scopes), output_words, driver)
        delta = sum(w[name] * value for name, value in feats.items())
        c.score_before = c.score
        c.score += delta
        if feats:
            c.why.append("rerank " + ", ".join(f"{k}{'' if v == 1 else f'={v:.2f}'}"
                                               for k, v in feats.items()))


@lru_cache(maxsize=8)
def _stems(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(light_stem(w.lower()) for w in words)


_CE = {}


def cross_encode(cands: list, records: list[Chunk], question: str,
                 settings: CrossEncoderSettings) -> None:
    """Optional cross-encoder pass over the top candidates (off unless a model path is set)."""
    if not settings.model:
        return
    import math

    from sentence_transformers import CrossEncoder

    from ..contracts.errors import UserError

    if settings.model not in _CE:
        try:
            _CE[settings.model] = CrossEncoder(settings.model, device=settings.device,
                                               local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - any load failure is a configuration problem
            raise UserError(f"cannot load cross-encoder '{settings.model}': {exc}") from None
    model = _CE[settings.model]
    top = cands[: settings.top_n]
    pairs = [(question, _ce_text(records[c.idx])) for c in top]
    for c, s in zip(top, model.predict(pairs, show_progress_bar=False)):
        prob = 1 / (1 + math.exp(-float(s)))
        c.score += settings.weight * prob
        c.why.append(f"cross-encoder {prob:.2f}")


def _ce_text(c: Chunk) -> str:
    head = f"{c.path} {c.kind} {c.qualified_name or c.name}\n{c.comment}\n"
    return head + c.text[:1200]
