"""Sibling files compete on the words that tell them apart.

Files of one folder share their folder's vocabulary: every file of a solver folder says
"solver", "matrix", "iteration", so the dense and BM25 lists rank the folder's files close
together, often in the wrong order (the right part of the code, the wrong file). Inside the
folder those words say nothing; the question's words that only some of its files hold do. So
each folder's files among the first ranked are scored by a BM25 whose document frequencies
are counted inside the folder, and a file passes a sibling above it when it wins that score
clearly (`retrieval.sibling_words.margin` times). The folder's files then take the places
they held, in the new order; other folders' files keep theirs.
"""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import PurePosixPath

import numpy as np

from ..index.store import IndexStore


def folder_of(path: str) -> str:
    return str(PurePosixPath(path).parent)


class _Folders:
    """The folders of the whole-file BM25 rows (once per loaded index): each row's folder
    number, each folder's size, and each path's row."""

    def __init__(self, paths: list[str]):
        ids: dict[str, int] = {}
        self.of_row = np.asarray([ids.setdefault(folder_of(p), len(ids)) for p in paths],
                                 dtype=np.int64)
        self.ids = ids
        self.size = np.bincount(self.of_row, minlength=len(ids))
        self.row = {p: j for j, p in enumerate(paths)}


def _folders(store: IndexStore) -> _Folders:
    memo = store.memo("sibling_folders")
    if "folders" not in memo:
        memo["folders"] = _Folders(store.lexical.files.paths)
    return memo["folders"]


def local_scores(store: IndexStore, groups: dict[str, list[str]], tokens: list[str]
                 ) -> dict[str, float]:
    """Each path of `groups` (folder -> files of it) scored by whole-file BM25 with the
    inverse document frequency counted among its folder's files: a word all of them hold
    weighs almost nothing, a word only one holds weighs most. The term-frequency part is the
    index's own (its saved score over its global idf)."""
    files, fo = store.lexical.files, _folders(store)
    want = {fo.row[p]: p for ps in groups.values() for p in ps if p in fo.row}
    out = {p: 0.0 for ps in groups.values() for p in ps}
    rows = np.fromiter(want, dtype=np.int64)
    for t in dict.fromkeys(tokens):
        docs, vals = files.index.column(t)
        hit = np.isin(docs, rows)
        if not hit.any():
            continue
        df = np.bincount(fo.of_row[docs], minlength=len(fo.ids))  # per folder
        g = files.index.idf(t) or 1.0
        for d, v in zip(docs[hit], vals[hit]):
            f = fo.of_row[d]
            n, k = fo.size[f], df[f]
            out[want[int(d)]] += float(v) / g * math.log((n - k + 0.5) / (k + 0.5) + 1.0)
    return out


def clear_wins(paths: list[str], local: dict[str, float], margin: float) -> list[str]:
    """The ranked order, except that a file passes the siblings above it whose in-folder
    score it beats `margin` times (a clear win, not a reshuffle of near ties)."""
    out: list[str] = []
    for p in paths:
        at = len(out)
        while at > 0 and local[p] > margin * local[out[at - 1]]:
            at -= 1
        out.insert(at, p)
    return out


def sibling_contest(store: IndexStore, ranked: list, tokens: list[str], sw) -> int:
    """Reorder, folder by folder, the best candidates of the first `sw.top_files` ranked files
    (of `sw.scopes`) among the scores they hold. A moved file's other candidates move by the
    same amount. Returns how many files moved; `ranked` needs sorting again after it."""
    files = store.lexical.files
    if not sw.enabled or files is None or not ranked:
        return 0
    best: dict[str, object] = {}
    for c in ranked:
        r = store.records[c.idx]
        if r.kind == "module" or r.path in best or r.scope not in sw.scopes:
            continue
        best[r.path] = c
        if len(best) >= sw.top_files:
            break
    groups: dict[str, list[str]] = defaultdict(list)
    for p in best:  # in ranked order
        groups[folder_of(p)].append(p)
    # Not in a folder holding most of the code: a flat code's one folder's words are the
    # whole code's, and the contest would only repeat whole-file BM25.
    fo = _folders(store)
    limit = sw.max_folder_share * len(files.paths)
    groups = {f: ps for f, ps in groups.items()
              if len(ps) >= 2 and f in fo.ids and fo.size[fo.ids[f]] <= limit}
    if not groups:
        return 0
    local = local_scores(store, groups, tokens)
    shift: dict[str, float] = {}
    for paths in groups.values():
        order = clear_wins(paths, local, sw.margin)
        for p, slot in zip(order, [best[q].score for q in paths]):
            if slot != best[p].score:
                shift[p] = slot - best[p].score
    for c in ranked:
        p = store.records[c.idx].path
        if p in shift:
            c.score += shift[p]
            c.why.append(f"{'before' if shift[p] > 0 else 'after'} a sibling file: by the "
                         f"question's words that tell its folder's files apart")
    return len(shift)
