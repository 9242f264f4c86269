"""Variants named in file names: one folder holding one program or routine several times, told
apart by a word of the file name (`solver.cc`, `solver-mpi.cc`, `solver-cuda.cu`;
`MPI_abort.c`, `SHMEM_abort.c`). A question that names some of the variant words ("in the MPI
version") is answered from those files; the other variants' picks follow the rest.

This is `ports.unnamed_versions` one level down: there the versions are sibling folders, here
they are sibling files. A folder's variants are worked out the first time one of its files is
picked, and kept in `IndexStore.memo`: a one-question `ask` reads only the folders it shows.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from ..index.lexical import split_identifier, tokenize
from ..index.store import IndexStore
from .ports import file_text, is_code_name

Family = dict[str, frozenset[str]]  # member path -> its variant words


def stem_words(path: str) -> frozenset[str]:
    """The words of a file stem as written, unstemmed: "nstream-mpi" -> nstream, mpi;
    "CUDAStream" -> cuda, stream (the identifier split of the lexical index)."""
    return frozenset(w for part in re.split(r"[^A-Za-z0-9_]+", PurePosixPath(path).stem)
                     for w in split_identifier(part))


def _code_files(store: IndexStore) -> dict[str, list[str]]:
    """Folder -> its indexed code files, sorted (once per loaded index)."""
    memo = store.memo("code_files_by_folder")
    if "by_folder" not in memo:
        by_folder: dict[str, list[str]] = {}
        for p in sorted(store.manifest.files):
            if is_code_name(p) and store.file_record_index(p) is not None:
                by_folder.setdefault(PurePosixPath(p).parent.as_posix(), []).append(p)
        memo["by_folder"] = by_folder
    return memo["by_folder"]


def folder_families(store: IndexStore, folder: str, share: float,
                    max_bytes: int | None = None) -> list[Family]:
    """The variant families of one folder. Two files are variants when their stems share a
    word and differ in others, and their texts are mostly the same words (`share` of their
    words in common, Jaccard: a variant adds its platform's calls to one algorithm; two tests
    or two kernels built on one pattern share less). A member's variant words are the words
    of its stem that not every member has (none for the plain `solver.cc`); a family whose
    members share no stem word is none."""
    memo = store.memo(f"name_variants:{share}")
    if folder not in memo:
        paths = _code_files(store).get(folder, [])
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
        groups: dict[str, list[str]] = {}
        for p in paths:
            groups.setdefault(root(p), []).append(p)
        families = []
        for members in groups.values():
            base = frozenset.intersection(*(words[p] for p in members))
            if len(members) >= 2 and base:
                families.append({p: words[p] - base for p in members})
        memo[folder] = families
    return memo[folder]


def name_variants(store: IndexStore, share: float,
                  max_bytes: int | None = None) -> dict[str, frozenset[str]]:
    """Code file -> its variant words, over every folder (for tests and diagnostics)."""
    return {p: own for folder in _code_files(store)
            for family in folder_families(store, folder, share, max_bytes)
            for p, own in family.items()}


def unnamed_variants(store: IndexStore, asked: set[str], share: float,
                     max_bytes: int | None = None,
                     shown: set[str] | None = None) -> frozenset[str]:
    """The variant files whose picks follow the rest: in a family where the question names a
    variant word of some members (`asked`: its words as written, and the folder words of the
    languages it names), the members without such a word; none when it names none. Only the
    folders of `shown` (the picks) are read; None reads every folder."""
    folders = _code_files(store) if shown is None else \
        {PurePosixPath(p).parent.as_posix() for p in shown}
    later: set[str] = set()
    for folder in folders:
        for family in folder_families(store, folder, share, max_bytes):
            if any(own & asked for own in family.values()) \
                    and not all(own & asked for own in family.values()):
                later.update(p for p, own in family.items() if not own & asked)
    return frozenset(later)
