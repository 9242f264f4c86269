"""Variants named in file names: one folder holding one program or routine several times, told
apart by a word of the file name (`solver.cc`, `solver-mpi.cc`, `solver-cuda.cu`;
`MPI_abort.c`, `SHMEM_abort.c`). A question that names some of the variant words ("in the MPI
version") is answered from those files; the other variants' picks follow the rest.

This is `ports.unnamed_versions` one level down: there the versions are sibling folders, here
they are sibling files. Every per-index table is computed once and kept in `IndexStore.memo`.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from ..index.lexical import tokenize
from ..index.store import IndexStore
from .ports import file_text, is_code_name

# Words of a file stem as written: "nstream-mpi" -> nstream, mpi; "CUDAStream" -> cuda, stream.
_STEM_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def stem_words(path: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _STEM_WORD.findall(PurePosixPath(path).stem))


def name_variants(store: IndexStore, share: float,
                  max_bytes: int | None = None) -> dict[str, frozenset[str]]:
    """Code file -> its variant words, for files that are variants of another file of their
    folder: the stems share a word and differ in others, and the texts are mostly the same
    words (`share` of their words in common, Jaccard: a variant adds its platform's calls to
    one algorithm; two tests or two kernels built on one pattern share less). A file's
    variant words are the words of its stem that not every member of its family has (none for
    the plain `solver.cc`); a family whose members share no stem word is none."""
    memo = store.memo(f"name_variants:{share}")
    if "of" not in memo:
        by_folder: dict[str, list[str]] = {}
        for p in sorted(store.manifest.files):
            if is_code_name(p) and store.file_record_index(p) is not None:
                by_folder.setdefault(PurePosixPath(p).parent.as_posix(), []).append(p)
        of: dict[str, frozenset[str]] = {}
        for paths in by_folder.values():
            if len(paths) < 2:
                continue
            words = {p: stem_words(p) for p in paths}
            texts: dict[str, set[str]] = {}

            def text(p: str) -> set[str]:
                if p not in texts:
                    texts[p] = set(tokenize(file_text(store, p, max_bytes)))
                return texts[p]
            parent = {p: p for p in paths}

            def root(p: str) -> str:
                while parent[p] != p:
                    parent[p] = p = parent[parent[p]]
                return p
            for i, a in enumerate(paths):
                for b in paths[i + 1:]:
                    if not words[a] & words[b] or words[a] == words[b]:
                        continue
                    ta, tb = text(a), text(b)
                    if ta and tb and len(ta & tb) >= share * len(ta | tb):
                        parent[root(a)] = root(b)
            families: dict[str, list[str]] = {}
            for p in paths:
                families.setdefault(root(p), []).append(p)
            for members in families.values():
                base = frozenset.intersection(*(words[p] for p in members))
                if len(members) >= 2 and base:
                    of.update((p, words[p] - base) for p in members)
        memo["of"] = of
        by_family: dict[tuple[str, frozenset[str]], list[str]] = {}
        for p, own in of.items():  # a family: its folder and the stem words all members share
            by_family.setdefault((PurePosixPath(p).parent.as_posix(), stem_words(p) - own),
                                 []).append(p)
        memo["families"] = list(by_family.values())
    return memo["of"]


def unnamed_variants(store: IndexStore, asked: set[str], share: float,
                     max_bytes: int | None = None) -> frozenset[str]:
    """The variant files whose picks follow the rest: in a family where the question names a
    variant word of some members (`asked`: its words as written, and the folder words of the
    languages it names), the members without such a word; none when it names none."""
    of = name_variants(store, share, max_bytes)
    later: set[str] = set()
    for members in store.memo(f"name_variants:{share}")["families"]:
        named = [p for p in members if of[p] & asked]
        if named and len(named) < len(members):
            later.update(p for p in members if not of[p] & asked)
    return frozenset(later)
