"""Structural expansion: add graph neighbours of the best hits (callees/callers, owning class,
a file's best symbols, a module's files, included files), bounded by the intent's profile.

Neighbours enter with a decayed score so that they follow, not displace, strong direct hits;
each records the seed and the relation that brought it in.
"""
from __future__ import annotations

import numpy as np

from ..contracts.settings.retrieval import ExpansionSettings
from ..index.layout import chain_root, file_node, node_chunk, node_path, sym_node
from ..index.store import IndexStore


def _best_by_similarity(store: IndexStore, ids: list[int], qvec: np.ndarray, n: int) -> list[int]:
    if not ids or n <= 0:
        return []
    sims = np.asarray(store.vectors[ids]) @ qvec
    return [ids[int(j)] for j in np.argsort(-sims)[:n]]


def _included(store: IndexStore, path: str, qvec: np.ndarray, n: int) -> list[int]:
    """File entities of the files `path` includes, most relevant to the question first (the
    first include is usually a configuration header that says nothing)."""
    ids = [store.file_record_index(node_path(d))
           for t, d in store.edges_out.get(file_node(path), []) if t == "include"]
    return _best_by_similarity(store, [i for i in ids if i is not None], qvec, n)


def expand(store: IndexStore, cands: dict, ranked: list, qvec: np.ndarray, profile_name: str,
           settings: ExpansionSettings, make_candidate) -> list[tuple[int, str, str]]:
    """Add neighbours to `cands` (idx -> Candidate); returns (idx, relation, seed id) added."""
    prof = settings.profiles[profile_name]  # Settings validates every routed profile name
    added: list[tuple[int, str, str]] = []
    records = store.records

    def add(i: int | None, relation: str, seed, klass: str) -> bool:
        if i is None or len(added) >= prof.total:
            return False
        seed_rec = records[seed.idx]
        # Supplementary context (what a file includes) is further from the question.
        score = seed.score * settings.decay * (settings.decay if klass == "supplementary" else 1)
        if i in cands:
            c = cands[i]
            if c.evidence_class == "primary":
                c.why.append(f"also {relation} of {seed_rec.name or seed_rec.path}")
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

    for seed in ranked[: settings.seeds]:
        r = records[seed.idx]
        node = sym_node(r.id)
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
        calls = [sym_index(d) for t, d in store.edges_out.get(node, []) if t == "call"]
        calls += [sym_index(s) for t, s in store.edges_in.get(node, []) if t == "call"]
        calls = [i for i in dict.fromkeys(calls) if i is not None]
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
