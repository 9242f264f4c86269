"""Parallel ports: the same file names in sibling folders (serial, threaded and device
versions of one code). A port family is one answer, shown in one member: the port the question
names, else the plainest (the reference the others add platform code to), chosen per folder so
that one answer stays in one port.

Every per-index table here is computed once and kept in `IndexStore.memo`.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import PurePosixPath

import numpy as np

from ..index.lexical import tokenize
from ..index.store import IndexStore
from .query import CODE_EXT


@lru_cache(maxsize=50000)
def base_name(path: str) -> str:
    return PurePosixPath(path).name


@lru_cache(maxsize=50000)
def is_code_name(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in CODE_EXT


def mirrored(store: IndexStore, a: str, b: str, share: float) -> bool:
    """True when two same-named files sit in folders that mirror each other: the folders'
    file-name sets overlap by at least `share` (Jaccard), as parallel port folders do (each
    holds its own build file, kernels and headers under the same names)."""
    if share > 1:
        return False
    names = store.memo("folder_names")
    if not names:
        for p in store.manifest.files:
            pp = PurePosixPath(p)
            names.setdefault(pp.parent.as_posix(), set()).add(pp.name)
    fa = names.get(PurePosixPath(a).parent.as_posix(), set())
    fb = names.get(PurePosixPath(b).parent.as_posix(), set())
    union = len(fa | fb)
    return union > 2 and len(fa & fb) >= share * union


_PORT_KINDS = {"function", "method", "constructor", "destructor", "operator", "class", "struct"}


def _plainest(store: IndexStore, name: str, max_bytes: int | None = None,
              by_folder: bool = False) -> str | None:
    """The member of a same-named family with the least code of its own: the fewest distinct
    words that fewer than half of its siblings use (backend calls, pragmas, launch syntax),
    then the shortest. With `by_folder`, the member in the plainest port folder
    (`_port_plainness`) comes first, so that one answer stays in one port. Computed once per
    family and loaded index."""
    cache = store.memo("plainest_folder" if by_folder else "plainest")
    if name not in cache:
        own = _own_words(store, name, max_bytes)
        rank = _port_plainness(store, max_bytes) if by_folder else {}
        cache[name] = min(own, default=None, key=lambda p: (
            -rank.get(PurePosixPath(p).parent.as_posix(), 0.0), own[p],
            store.records[store.file_record_index(p)].end_line, p))
    return cache[name]


def _member_words(store: IndexStore, name: str, max_bytes: int | None) -> dict[str, Counter]:
    """Per indexed member of a same-named family: the counts of the words of its text."""
    cache = store.memo("member_words")
    if name not in cache:
        paths = [p for p in store.by_basename.get(name, []) if store.file_record_index(p)
                 is not None]
        cache[name] = {p: Counter(tokenize(_file_text(store, p, max_bytes))) for p in paths}
    return cache[name]


def _own_words(store: IndexStore, name: str, max_bytes: int | None) -> dict[str, int]:
    """Per member of a same-named code family: its distinct words that fewer than half of
    its siblings use."""
    cache = store.memo("own_words")
    if name not in cache:
        words = _member_words(store, name, max_bytes)
        used = Counter(t for ws in words.values() for t in ws)
        half = len(words) / 2
        cache[name] = {p: sum(1 for t in ws if used[t] - 1 < half) for p, ws in words.items()}
    return cache[name]


def _port_namer(store: IndexStore, members: list[str], asked: set[str],
                max_bytes: int | None):
    """`named(p)`: the question names member p's port folder: a word of its folder that the
    other members' folders lack is a question word, or abbreviates one ('omp' / 'openmp').
    A folder word that the other members' texts typically use at least half as often names
    what every port does (MPI calls in each port's comm.cpp), not this port ("on MPI ranks" is
    no request for the mpi-spec/ port)."""
    folders = {p: set(tokenize(PurePosixPath(p).parent.as_posix())) for p in members}
    common = set.intersection(*folders.values())
    texts = _member_words(store, PurePosixPath(members[0]).name, max_bytes)

    def shared(p: str, word: str) -> bool:
        others = sorted(ws[word] for q, ws in texts.items() if q != p)
        typical = others[len(others) // 2] if others else 0
        return typical > 0 and 2 * typical >= texts.get(p, Counter())[word]

    def named(p: str) -> bool:
        own = folders[p] - common
        return any((f in asked or any(abbreviates(f, w) for w in asked)) and not shared(p, f)
                   for f in own)
    return named


def _port_plainness(store: IndexStore, max_bytes: int | None) -> dict[str, float]:
    """Per folder holding members of same-named code families: the share of those families
    in which its member is the plainest (equally plain members share the win). A port is a
    folder, and the reference port (the serial or base version the others add platform code
    to) is plainest in most of its files, even where one file of another port happens to be
    shorter."""
    memo = store.memo("port_plainness")
    if not memo:
        wins: Counter = Counter()
        seen: Counter = Counter()
        for name, paths in store.by_basename.items():
            if len(paths) < 2 or not is_code_name(name):
                continue
            own = _own_words(store, name, max_bytes)
            if len(own) < 2:
                continue
            # Members equally plain (identical copies, most often) share the win: a tie
            # broken by path would crown whichever folder sorts first.
            least = min(own.values())
            tied = [p for p in own if own[p] == least]
            for p in own:
                seen[PurePosixPath(p).parent.as_posix()] += 1
            for p in tied:
                wins[PurePosixPath(p).parent.as_posix()] += 1 / len(tied)
        memo.update({f: wins[f] / n for f, n in seen.items()})
    return memo


def _file_text(store: IndexStore, path: str, max_bytes: int | None) -> str:
    text = store.repo_text(path, max_bytes)
    if text is None:  # repository moved since indexing: what the records hold of it
        return "\n".join(store.records[i].text for i in store.members(path))
    return text


@lru_cache(maxsize=200000)
def abbreviates(short: str, word: str) -> bool:
    """A folder word that abbreviates a question word ('omp' / 'openmp', 'std' / 'standard'):
    its letters in order in the longer word, the same first and last letter (so 'acc' does not
    abbreviate 'accumulate')."""
    return (len(short) >= 3 and len(word) > len(short) and short.isalpha()
            and short[0] == word[0] and short[-1] == word[-1] and _in_order(short, word))


def _in_order(short: str, word: str) -> bool:
    it = iter(word)
    return all(ch in it for ch in short)


def plainest_twin(store: IndexStore, r, asked: set[str], shown: set[str], qvec: np.ndarray,
                   share: float, max_bytes: int | None, by_folder: bool) -> int | None:
    name = base_name(r.path)
    family = [p for p in store.by_basename.get(name, []) if p != r.path]
    if not family:
        return None
    if not is_code_name(name):
        return _plainest_port_file(store, r, family, asked, shown, share, qvec, max_bytes) \
            if by_folder else None
    # A port the question names ("the OpenMP version": folder omp) is the one shown; else the
    # plainest member.
    named = _port_namer(store, [r.path, *family], asked, max_bytes)
    if named(r.path):
        return None
    plain = next((p for p in family if named(p)), None) or _plainest(store, name, max_bytes,
                                                                      by_folder)
    if plain is None or plain == r.path or plain in shown:
        return None
    code = [i for i in store.members(plain) if store.records[i].kind in _PORT_KINDS]
    names = {store.records[i].name for i in code}
    mine = {store.records[i].name for i in store.members(r.path)}
    if not names or len(names & mine) < share * len(names):
        return None  # not ports of one thing: different files that share a name
    same = [i for i in code if store.records[i].name == r.name and store.records[i].kind == r.kind]
    if same:
        return same[0]
    if r.kind == "file":
        return store.file_record_index(plain)
    sims = np.asarray(store.vectors[code]) @ qvec
    return code[int(np.argmax(sims))]


def _plainest_port_file(store: IndexStore, r, family: list[str], asked: set[str],
                        shown: set[str], share: float, qvec: np.ndarray,
                        max_bytes: int | None) -> int | None:
    """A build script or deck of a port folder (same name in mirrored folders) is shown in
    the copy of the port the question names, else in the plainest port folder's copy."""
    rank = _port_plainness(store, max_bytes)
    parent = lambda p: PurePosixPath(p).parent.as_posix()  # noqa: E731
    if parent(r.path) not in rank:
        return None
    ports = [p for p in family if parent(p) in rank and mirrored(store, p, r.path, share)]
    if not ports:
        return None
    named = _port_namer(store, [r.path, *ports], asked, max_bytes)
    if named(r.path):
        return None
    best = next((p for p in ports if named(p)), None)
    if best is None:
        best = max(ports, key=lambda p: rank[parent(p)])
        if rank[parent(best)] <= rank[parent(r.path)]:
            return None
    if best in shown:
        return None
    if r.kind == "file":
        return store.file_record_index(best)
    inner = [i for i in store.members(best) if store.records[i].kind != "file"]
    if not inner:
        return store.file_record_index(best)
    sims = np.asarray(store.vectors[inner]) @ qvec
    return inner[int(np.argmax(sims))]
