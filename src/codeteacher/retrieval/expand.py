"""Structural expansion: add graph neighbours of the best hits (callees/callers, owning class,
a file's best symbols, a module's files, included files), bounded by the intent's profile.

Neighbours enter with a decayed score so that they follow, not displace, strong direct hits;
each records the seed and the relation that brought it in.
"""
from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from pathlib import PurePosixPath

import numpy as np

from ..contracts.settings.retrieval import ExpansionSettings
from ..index.layout import chain_root, file_node, node_chunk, node_path, sym_node
from ..index.store import IndexStore
from .ports import family_key
from .query import CODE_EXT

_FILE_WORD = re.compile(r"[\w./+-]+\.[A-Za-z][A-Za-z0-9]{0,5}")
# How one build file hands work to another: CMake's add_subdirectory(dir) and include(file),
# Make's include and a recursive $(MAKE) -C dir / cd dir && make. A variable (${X}) is no path.
_SUBDIR = re.compile(r"\badd_subdirectory\s*\(\s*([^\s)$]+)", re.I)
_CMAKE_INCLUDE = re.compile(r"\binclude\s*\(\s*([^\s)$]+)", re.I)
_MAKE_INCLUDE = re.compile(r"^[ \t]*-?s?include[ \t]+([^\s$]+)", re.M)
_MAKE_DIR = re.compile(r"(?:\$[({]MAKE[)}]|\bmake)\s+(?:[^\n;&|]{0,200}?\s)?-C\s*([^\s$;&|]+)"
                       r"|\bcd\s+([^\s$;&|]+)\s*(?:&&|;)\s*(?:\$[({]MAKE[)}]|make)\b")
_MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
# Macros a file tests (#ifdef M, #ifndef M, #if defined(M) || M > 2) and macro-shaped words a
# build file mentions (-DM, target_compile_definitions(x PRIVATE M), option(M ...)).
_CONDITION = re.compile(r"^[ \t]*#[ \t]*(ifn?def|el?if)\b([^\n]*)", re.M)
_MACRO = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")
_DEFINE_FLAG = re.compile(r"-D(?=[A-Za-z_])")  # -DUSE_X: the macro is USE_X


def _best_by_similarity(store: IndexStore, ids: list[int], qvec: np.ndarray, n: int) -> list[int]:
    if not ids or n <= 0:
        return []
    sims = np.asarray(store.vectors[ids]) @ qvec
    return [ids[int(j)] for j in np.argsort(-sims)[:n]]


def _best_found(store: IndexStore, cands: dict, ids: list[int], qvec: np.ndarray,
                n: int) -> list[int]:
    """The neighbours the question itself ranks highest (fused score), then the rest by
    similarity: among a function's callers, the one the question also found says more."""
    if n <= 0:
        return []
    by_similarity = _best_by_similarity(store, ids, qvec, len(ids))
    # (A stable sort: neighbours of one score, or not found, stay in similarity order.)
    return sorted(by_similarity, key=lambda i: -cands[i].score if i in cands else 1.0)[:n]


def _included(store: IndexStore, path: str, qvec: np.ndarray, n: int) -> list[int]:
    """File entities of the files `path` includes, most relevant to the question first (the
    first include is usually a configuration header that says nothing)."""
    ids = [store.file_record_index(node_path(d))
           for t, d in store.edges_out.get(file_node(path), []) if t == "include"]
    return _best_by_similarity(store, [i for i in ids if i is not None], qvec, n)


_DEFINITION_END = re.compile(r"\}\s*;")


def _statements(text: str) -> int:
    """Semicolons that end statements: `};` closes a definition (`{ return n_; };` is one)."""
    return text.count(";") - len(_DEFINITION_END.findall(text))


def _includers(store: IndexStore, path: str) -> list[str]:
    """Files whose `#include` resolves to `path`, in graph order."""
    return [node_path(s) for t, s in store.edges_in.get(file_node(path), []) if t == "include"]


def _twins(store: IndexStore, path: str) -> list[str]:
    """Declaration/definition twins: the same stem in the same folder, another code file
    (X.h / X.hpp / X.cpp). Cached per loaded index (asked for every seed of every query)."""
    cache = store.memo("twins")
    if path not in cache:
        cache[path] = _find_twins(store, path)
    return cache[path]


def _find_twins(store: IndexStore, path: str) -> list[str]:
    pp = PurePosixPath(path)
    if pp.suffix.lower() not in CODE_EXT:
        return []
    return [p for p in store.by_stem.get(pp.stem.lower(), []) if p != path
            and PurePosixPath(p).parent == pp.parent and PurePosixPath(p).suffix.lower()
            in CODE_EXT]


def _build_mentions(store: IndexStore) -> dict[str, list[int]]:
    """base name -> build records (CMake, Makefile, ...) whose text names that file; computed
    once per loaded index."""
    cache = store.memo("build_mentions")
    if "by_name" in cache:
        return cache["by_name"]
    names = {PurePosixPath(p).name for p in store.manifest.files}
    out: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(store.records):
        if r.scope != "build" or r.kind in ("file", "module"):
            continue
        for word in set(_FILE_WORD.findall(r.text)):
            base = PurePosixPath(word).name
            if base in names and PurePosixPath(r.path).name != base:
                out[base].append(i)
    cache["by_name"] = out
    return out


def _build_links(store: IndexStore) -> dict[str, list[str]]:
    """build file -> the build files it hands work to and those that hand work to it (both
    ways: a question about the build reaches the top-level file and the one doing the work);
    computed once per loaded index."""
    cache = store.memo("build_links")
    if "links" in cache:
        return cache["links"]
    files = store.manifest.files  # path -> digest
    texts: dict[str, list[str]] = defaultdict(list)
    for r in store.records:
        if r.scope == "build" and r.kind not in ("file", "module"):
            texts[r.path].append(r.text)

    def resolve(here: str, target: str, names: tuple[str, ...] = ()) -> str | None:
        target = target.strip("\"'").replace("${CMAKE_CURRENT_SOURCE_DIR}/", "")
        base = PurePosixPath(here).parent
        for rel in ([f"{target}/{n}" for n in names] if names else [target]):
            path = posixpath.normpath(str(base / rel))
            if path in files:
                return path
        # include(Module): a module found through CMAKE_MODULE_PATH, if its name is unique.
        if not names and "/" not in target:
            name = f"{target}.cmake"
            hits = [p for p in store.by_basename.get(name, []) if PurePosixPath(p).name == name]
            return hits[0] if len(hits) == 1 else None
        return None

    links: dict[str, list[str]] = defaultdict(list)
    for path, parts in texts.items():
        text = "\n".join(parts)
        cmake = PurePosixPath(path).name.lower() == "cmakelists.txt" or path.endswith(".cmake")
        found = ([resolve(path, m, ("CMakeLists.txt",)) for m in _SUBDIR.findall(text)]
                 + [resolve(path, m) for m in _CMAKE_INCLUDE.findall(text)]) if cmake else \
            ([resolve(path, m) for m in _MAKE_INCLUDE.findall(text)]
             + [resolve(path, a or b, _MAKEFILES) for a, b in _MAKE_DIR.findall(text)])
        for target in dict.fromkeys(t for t in found if t and t != path):
            links[path].append(target)
            links[target].append(path)
    cache["links"] = dict(links)
    return cache["links"]


def _tested_macros(store: IndexStore, path: str) -> frozenset[str]:
    """Macro names the file's preprocessor conditions test (read from the file as it is)."""
    cache = store.memo("tested_macros")
    if path not in cache:
        text = store.repo_text(path) or ""
        cache[path] = frozenset(m for _, cond in _CONDITION.findall(text)
                                for m in _MACRO.findall(cond))
    return cache[path]


def _macro_builds(store: IndexStore) -> dict[str, list[int]]:
    """macro-shaped word -> build records (not file entities) that mention it."""
    cache = store.memo("macro_builds")
    if "map" not in cache:
        out: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(store.records):
            if r.scope == "build" and r.kind not in ("file", "module"):
                for m in set(_MACRO.findall(_DEFINE_FLAG.sub("-D ", r.text))):
                    out[m].append(i)
        cache["map"] = dict(out)
    return cache["map"]


def expand(store: IndexStore, cands: dict, ranked: list, qvec: np.ndarray, profile_name: str,
           settings: ExpansionSettings, make_candidate,
           named: frozenset[str] = frozenset(),
           build_switch: bool = False) -> list[tuple[int, str, str]]:
    """Add neighbours to `cands` (idx -> Candidate); returns (idx, relation, seed id) added.
    `named` holds the files the question names; `build_switch` says the question asks how
    to switch something at build time (settings.macro_cue)."""
    prof = settings.profiles[profile_name]  # Settings validates every routed profile name
    added: list[tuple[int, str, str]] = []
    records = store.records

    def add(i: int | None, relation: str, seed, klass: str, decay: float | None = None) -> bool:
        if i is None or len(added) >= prof.total:
            return False
        seed_rec = records[seed.idx]
        # Supplementary context (what a file includes) is further from the question.
        other_file = klass == "other_file"
        if decay is None:
            decay = settings.other_file_decay if other_file else settings.decay
        score = seed.score * decay * (settings.decay if klass == "supplementary" else 1)
        klass = "expansion" if other_file else klass
        if i in cands:
            c = cands[i]
            if c.evidence_class == "primary":
                c.why.append(f"also {relation} of {seed_rec.name or seed_rec.path}")
                if other_file and score > c.score:  # found weakly, now carried by the seed
                    c.score = score
                    c.evidence_class = klass  # its place is the seed's doing, not the question's
                    return True
                return False
            if any(a[0] == i for a in added):  # reached again from another seed
                return False
        c = cands.setdefault(i, make_candidate(i))
        if score > c.score:
            c.score = score
        c.evidence_class = klass
        c.why.append(f"{relation} of {seed_rec.qualified_name or seed_rec.name or seed_rec.path}")
        added.append((i, relation, seed_rec.id))
        return True

    def sym_index(node: str) -> int | None:
        chunk_id = node_chunk(node)
        return store.by_id.get(chunk_id) if chunk_id else None

    shown = {records[c.idx].path for c in ranked[: settings.seeds]}

    def pick(ids: list[int], n: int) -> list[int]:
        if settings.neighbour_order == "found_first":
            return _best_found(store, cands, ids, qvec, n)
        return _best_by_similarity(store, ids, qvec, n)

    def best_in(path: str) -> int | None:
        members = [i for i in store.by_path.get(path, []) if records[i].kind not in
                   ("declaration", "function_part") and not records[i].is_declaration]
        best = _best_by_similarity(store, members, qvec, 1)
        return best[0] if best else store.file_record_index(path)

    def best_of(path: str) -> int | None:
        """The file's candidate the question ranks highest, else its best chunk."""
        found = [i for i in store.by_path.get(path, []) if i in cands]
        return max(found, key=lambda i: cands[i].score) if found else best_in(path)

    def in_own_files(ids: list[int]) -> list[int]:
        """Those of `ids` not in a file shown, nor in another port's copy of one:
        plainest_variants shows that copy as the same file, so it would add nothing."""
        families = {family_key(store, p) for p in shown}
        return [i for i in ids if records[i].path not in shown
                and family_key(store, records[i].path) not in families]

    if build_switch and prof.macro_builds:
        # A build switch: the build files that set a macro tested in one of the first files
        # found (by file, not by chunk: the seeds are often chunks of one file).
        by_macro, seen_files, n_added = _macro_builds(store), [], 0
        for c in ranked:
            if len(seen_files) >= settings.macro_seed_files or n_added >= prof.macro_builds:
                break
            r = records[c.idx]
            if r.path in seen_files or r.kind == "module":
                continue
            seen_files.append(r.path)
            if r.scope == "build":
                continue
            ids: list[int] = []
            for m in _tested_macros(store, r.path):
                hits = by_macro.get(m, [])
                if len({records[i].path for i in hits}) <= settings.macro_max_files:
                    ids += [i for i in hits if records[i].path not in shown]
            for i in pick(list(dict.fromkeys(ids)), prof.macro_builds - n_added):
                if add(i, "build file setting a macro it tests", c, "other_file"):
                    shown.add(records[i].path)
                    n_added += 1

    for n_seed, seed in enumerate(ranked[: settings.seeds]):
        r = records[seed.idx]
        node = sym_node(r.id)
        # Other files first: the twin that declares or defines, the build file naming it.
        n_twins = prof.twin if n_seed < settings.twin_seeds else 0
        for p in [t for t in _twins(store, r.path) if t not in shown][:n_twins]:
            if add(best_in(p), "declaration/definition twin", seed, "other_file",
                   settings.twin_decay):
                shown.add(p)
        if prof.build and r.kind != "module":
            builds = [i for i in _build_mentions(store).get(PurePosixPath(r.path).name, [])
                      if records[i].path not in shown]
            for i in _best_by_similarity(store, builds, qvec, prof.build):
                if add(i, "build file naming it", seed, "other_file"):
                    shown.add(records[i].path)
        if prof.build_links and r.scope == "build" and r.kind != "module":
            linked = [best_of(p) for p in _build_links(store).get(r.path, []) if p not in shown]
            for i in pick([i for i in linked if i is not None], prof.build_links):
                if add(i, "build file linked to it", seed, "other_file"):
                    shown.add(records[i].path)
        if prof.bases and r.kind in ("class", "struct"):
            bases = [sym_index(d) for t, d in store.edges_out.get(node, []) if t == "inherits"]
            for i in [b for b in bases if b is not None][: prof.bases]:
                add(i, "base class", seed, "other_file")
        # What a file the question names is for shows where it is included (a header found
        # only by its topic is not what its includers are about: they pushed out answers).
        if r.kind == "file" and prof.includers and r.path in named:
            twins = set(_twins(store, r.path))
            users = [p for p in _includers(store, r.path) if p not in twins]
            if len(users) <= settings.includers_max_files:
                found = [best_of(p) for p in users if p not in shown]
                for i in pick([i for i in found if i is not None], prof.includers):
                    if add(i, "file that includes it", seed, "other_file"):
                        shown.add(records[i].path)
        if r.kind == "file":
            members = [i for i in store.by_path.get(r.path, []) if records[i].kind not in
                       ("file", "declaration", "function_part") and not records[i].is_declaration]
            for i in _best_by_similarity(store, members, qvec, prof.file_symbols):
                add(i, "symbol in file", seed, "expansion")
            for i in _included(store, r.path, qvec, prof.include):
                add(i, "included by", seed, "supplementary")
            continue
        if r.kind == "module":
            files = [store.file_record_index(p) for p in store.manifest.files
                     if p.startswith(r.path.rstrip("/") + "/") and "/" not in
                     p[len(r.path.rstrip("/")) + 1:]]
            for i in _best_by_similarity(store, [f for f in files if f is not None], qvec,
                                         prof.module_files):
                add(i, "file in module", seed, "expansion")
            continue
        if r.kind == "call_chain":
            node = sym_node(chain_root(r.id))
        callers = [sym_index(s) for t, s in store.edges_in.get(node, []) if t == "call"]
        callers = [i for i in callers if i is not None]
        if prof.callers:
            elsewhere = in_own_files(callers)
            for i in pick(elsewhere, prof.callers):
                if add(i, "caller in another file", seed, "other_file"):
                    shown.add(records[i].path)
        calls = [sym_index(d) for t, d in store.edges_out.get(node, []) if t == "call"]
        if prof.callees and n_seed < settings.callee_seeds:
            # What the best match calls into in another file (the kernel a driver runs, the
            # helper that does the work), when the question found it too: the graph confirms
            # a weak hit rather than adding a guess (added guesses cost other sets); a
            # one-statement accessor (`return size;`) does no work worth showing.
            away = [i for i in in_own_files([i for i in calls if i is not None and i in cands])
                    if records[i].kind != "macro"
                    and _statements(records[i].text) >= settings.callee_min_statements]
            for i in pick(away, prof.callees):
                if add(i, "callee in another file", seed, "other_file"):
                    shown.add(records[i].path)
        calls = [i for i in dict.fromkeys(calls + callers) if i is not None]
        for i in _best_by_similarity(store, calls, qvec, prof.call):
            add(i, "call neighbour", seed, "expansion")
        if prof.owner:
            owners = [sym_index(s) for t, s in store.edges_in.get(node, []) if t == "owns"
                      and node_chunk(s)]
            for i in owners[: prof.owner]:
                add(i, "owning class", seed, "expansion")
        if prof.include and r.kind not in ("declaration",) and not r.is_declaration:
            for i in _included(store, r.path, qvec, 1):
                add(i, "included by", seed, "supplementary")
    return added
