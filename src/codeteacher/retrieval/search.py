"""Hybrid retrieval: dense (FAISS) + lexical (BM25) fused by reciprocal rank, plus exact
lookups of the files and symbols a question names and a search scoped to those files.

Every result carries the reasons it was picked (`why`), which `ask --explain` and the JSON
output show, so a surprising answer can be traced to its cause.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import numpy as np

from ..contracts.models import FORTRAN_EXT, Chunk, SearchHit
from ..contracts.settings import Settings
from ..index.layout import node_chunk, sym_node
from ..index.lexical import STOP, tokenize
from ..index.store import IndexStore
from .literal import match_literals, match_numbers, numbers
from .name_variants import unnamed_variants
from .ports import (PortRules, build_variant_key, family_key, is_code_name, language_words,
                    mirrored, other_port, plainest_twin, same_code, unnamed_versions)
from .query import QueryAnalysis, analyze
from .rerank import CODE as CODE_KINDS
from .rerank import low_signal
from .routing import cue_pattern
from .siblings import sibling_contest


@dataclass(eq=False)  # one Candidate per record: identity is equality (and much cheaper)
class Candidate:
    idx: int
    score: float = 0.0
    why: list[str] = field(default_factory=list)
    dense_rank: int | None = None
    lexical_rank: int | None = None
    fused: float = 0.0
    score_before: float | None = None  # before rerank
    evidence_class: str = "primary"


@dataclass
class Trace:
    """What happened during one retrieval, for --explain and for evaluation."""

    analysis: QueryAnalysis | None = None
    rows: list[dict] = field(default_factory=list)  # candidates, best first, with scores
    expansions: list[dict] = field(default_factory=list)
    filtered: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _top(scores: np.ndarray, k: int) -> list[int]:
    k = min(k, len(scores))
    if k <= 0:
        return []
    part = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in part[np.argsort(-scores[part])] if scores[i] > 0]


def gather_candidates(store: IndexStore, qvec: np.ndarray, qa: QueryAnalysis,
                      settings: Settings, allowed: np.ndarray | None = None,
                      file_weight: float | None = None,
                      scopes: tuple[str, ...] = ()) -> dict[int, Candidate]:
    rs = settings.retrieval
    cands: dict[int, Candidate] = {}

    def get(i: int) -> Candidate:
        return cands.setdefault(i, Candidate(idx=i))

    # Dense: one FAISS search (exact inner product on normalised vectors).
    n_dense = rs.dense_k if allowed is None else min(len(store.records),
                                                     rs.dense_k * rs.filtered_dense_factor)
    df = rs.dense_files
    depth = max(n_dense, df.depth) if df.enabled and df.weight else n_dense
    sims, ids = store.faiss.search(qvec.reshape(1, -1), min(depth, len(store.records)))
    rank = 0
    for i in ids[0]:
        if i < 0 or (allowed is not None and not allowed[i]):
            continue
        c = get(int(i))
        c.dense_rank = rank
        c.fused += 1.0 / (rs.rrf_k + rank + 1)
        c.why.append(f"dense #{rank + 1}")
        rank += 1
        if rank >= rs.dense_k:
            break
    # Lexical: BM25 over identifier-aware tokens.
    lex = store.lexical.scores(qa.tokens)
    if qa.short_forms and rs.short_form_weight:
        lex = lex + rs.short_form_weight * store.lexical.scores(qa.short_forms)
    if allowed is not None:
        lex = np.where(allowed, lex, 0.0)
    for rank, i in enumerate(_top(lex, rs.lexical_k)):
        c = get(i)
        c.lexical_rank = rank
        c.fused += 1.0 / (rs.rrf_k + rank + 1)
        c.why.append(f"bm25 #{rank + 1}")
    _feedback(store, qa, rs, get, allowed, cands)
    _exact_tokens(store, qa, rs, get, allowed, settings.collect.max_file_bytes)
    _base_classes(store, qvec, qa, rs, get, allowed)
    if df.enabled and df.weight:
        _dense_file_channel(store, ids[0], rs, get, allowed)
    _file_channel(store, qvec, qa, rs, get, allowed, lex, list(cands),
                  rs.file_channel.weight if file_weight is None else file_weight)
    _scope_channel(store, qvec, rs, get, allowed, lex, scopes)

    # Exact file lookups: the file's entity, plus its best chunks by similarity (file-scoped).
    for path in qa.files:
        if path in qa.named_files:
            factor, reason = 1.0, "file named in question"
        elif path in qa.stem_files:
            factor, reason = rs.stem_file_factor, "file named by its stem"
        elif path in qa.word_files:
            factor, reason = rs.word_file_factor, "file named by a plain word"
        else:
            factor, reason = rs.sibling_file_factor, "sibling of a named file"
        bonus = rs.exact_file_bonus * factor
        fi = store.file_record_index(path)
        if fi is not None and (allowed is None or allowed[fi]):
            c = get(fi)
            c.fused += bonus
            c.why.append(reason)
        members = [i for i in store.by_path.get(path, [])
                   if store.records[i].kind not in ("file",) and (allowed is None or allowed[i])]
        if members:
            local = np.asarray(store.vectors[members]) @ qvec + rs.file_scoped_lexical * \
                lex[members]
            for j in np.argsort(-local)[:rs.file_scoped_k]:
                c = get(members[int(j)])
                c.fused += bonus * rs.file_scoped_factor
                c.why.append("best match inside named file")
    # Exact symbol lookups: definitions outrank declarations; a class's constructors share
    # its name but are not what "the class X" refers to, so they get a fraction.
    mentions_ctor = any(w in qa.question.lower() for w in ("constructor", "destructor"))
    for sym, conf in qa.symbols.items():
        defs = store.by_symbol.get(sym, [])
        for i in defs[:rs.max_symbol_defs]:
            if allowed is not None and not allowed[i]:
                continue
            r = store.records[i]
            weight = conf * (rs.declaration_factor if r.is_declaration or r.kind == "declaration"
                             else 1.0)
            if r.kind == "function_part":
                weight *= rs.function_part_factor
            if r.kind in ("constructor", "destructor") and not mentions_ctor:
                weight *= rs.constructor_factor
            c = get(i)
            c.fused += rs.exact_symbol_bonus * weight
            c.why.append(f"symbol '{sym}' named")
    for module in qa.modules:
        mi = store.modules.get(module)
        if mi is not None and (allowed is None or allowed[mi]):
            c = get(mi)
            c.fused += rs.exact_file_bonus * rs.module_factor
            c.why.append("folder named in question")
    for c in cands.values():
        c.score = c.fused
    return cands


def _feedback(store: IndexStore, qa: QueryAnalysis, rs, get, allowed, cands) -> None:
    """Pseudo-relevance feedback in the repository's own vocabulary: words that several of the
    best first-round chunks share (and the question lacks) query BM25 once more, as one more
    ranked list at reduced weight. Bridges prose ("split the domain") to code words."""
    fb = rs.feedback
    if not fb.enabled or not cands:
        return
    top = sorted(cands.values(), key=lambda c: -c.fused)[: fb.docs]
    asked = set(qa.tokens)
    seen: dict[str, int] = defaultdict(int)
    for c in top:
        r = store.records[c.idx]
        for t in set(tokenize(f"{r.qualified_name} {r.signature} {r.comment} "
                              f"{r.text[: fb.chars]}")):
            if len(t) >= 3 and t not in asked and t not in STOP:
                seen[t] += 1
    terms = sorted((t for t, n in seen.items() if n >= fb.min_docs and t in store.lexical.vocab),
                   key=lambda t: -seen[t] * store.lexical.idf(t))[: fb.terms]
    if not terms:
        return
    scores = store.lexical.scores(terms)
    if allowed is not None:
        scores = np.where(allowed, scores, 0.0)
    for rank, i in enumerate(_top(scores, rs.lexical_k)):
        c = get(i)
        c.fused += fb.weight / (rs.rrf_k + rank + 1)
        if rank < 10:
            c.why.append(f"feedback bm25 #{rank + 1}")


def _exact_tokens(store: IndexStore, qa: QueryAnalysis, rs, get, allowed,
                  max_bytes: int | None = None) -> None:
    """Records that contain an identifier-shaped word of the question verbatim."""
    et = rs.exact_tokens
    quoted = numbers(qa.question) if et.enabled and et.numbers else []
    if not et.enabled or not (qa.literals or quoted):
        return
    found = match_literals(store, qa.literals, et.max_files, et.max_records,
                           et.acronym_factor, et.max_file_share, max_bytes) if qa.literals else []
    if quoted:
        found += match_numbers(store, quoted, et.max_files, et.max_file_share,
                               frozenset(rs.program_languages))
    for m in found:
        for i, same_case in m.exact.items():
            if allowed is not None and not allowed[i]:
                continue
            c = get(i)
            c.fused += et.bonus * m.weight * (1.0 if same_case else et.case_insensitive_factor)
            c.why.append(f"exact '{m.literal}'{'' if same_case else ' (other case)'} "
                         f"in {m.files} file{'s' if m.files > 1 else ''}")


def _base_classes(store: IndexStore, qvec: np.ndarray, qa: QueryAnalysis, rs, get,
                  allowed) -> None:
    """Classes that classes in several other files derive from (an interface that other files
    implement, not a family of helpers inside one header), when the question asks about a
    base class or what every implementation provides; closest to the question first."""
    bc = rs.base_classes
    if not bc.enabled or not cue_pattern(bc.cue).search(qa.question.lower()):
        return
    memo = store.memo("base_classes")
    if "ids" not in memo:
        memo["ids"] = [i for i, r in enumerate(store.records) if r.kind in ("class", "struct")
                       and len(_deriving_files(store, r)) >= bc.min_derived]
    ids = [i for i in memo["ids"] if allowed is None or allowed[i]]
    if not ids:
        return
    sims = np.asarray(store.vectors[ids]) @ qvec
    for rank, j in enumerate(np.argsort(-sims)[: bc.top]):
        c = get(ids[int(j)])
        c.fused += bc.weight / (rs.rrf_k + rank + 1)
        c.why.append(f"base class #{rank + 1}")


def _deriving_files(store: IndexStore, r: Chunk) -> set[str]:
    """Files other than `r`'s own that hold a class deriving from `r`."""
    out = set()
    for t, s in store.edges_in.get(sym_node(r.id), []):
        i = store.by_id.get(node_chunk(s)) if t == "inherits" else None
        if i is not None and store.records[i].path != r.path:
            out.add(store.records[i].path)
    return out


def _dense_file_channel(store: IndexStore, ids: np.ndarray, rs, get, allowed) -> None:
    """Files in the order of their best chunk among the nearest (`dense_files.depth`): each
    of the first `top_files` lends its reciprocal rank to that chunk and its file entity."""
    df = rs.dense_files
    seen: set[str] = set()
    for i in ids:
        if i < 0 or (allowed is not None and not allowed[i]):
            continue
        r = store.records[int(i)]
        if r.kind == "module" or r.path in seen:
            continue
        seen.add(r.path)
        contrib = df.weight / (rs.rrf_k + len(seen))
        targets = [int(i)]
        fi = store.file_record_index(r.path) if df.to_file_entity else None
        if fi is not None and fi != int(i) and (allowed is None or allowed[fi]):
            targets.append(fi)
        for t in targets:
            c = get(t)
            c.fused += contrib
            c.why.append(f"dense file #{len(seen)}")
        if len(seen) >= df.top_files:
            break


def _file_channel(store: IndexStore, qvec: np.ndarray, qa: QueryAnalysis, rs, get, allowed,
                  lex: np.ndarray, found_by, weight: float) -> None:
    """Whole-file BM25 as a third ranked list: each ranked file lends its reciprocal rank to
    its file entity and to its own best chunks for the question."""
    fc, files = rs.file_channel, store.lexical.files
    if not fc.enabled or files is None or not weight:
        return
    fs = files.scores(qa.tokens)
    if qa.short_forms and rs.short_form_file_weight:
        fs = fs + rs.short_form_file_weight * files.scores(qa.short_forms)
    found = set(found_by)
    for rank, j in enumerate(_top(fs, fc.top_files)):
        path = files.paths[j]
        contrib = weight / (rs.rrf_k + rank + 1)
        targets = []
        fi = store.file_record_index(path)
        if fi is not None:
            targets.append(fi)
        members = [i for i in store.members(path) if not fc.found_only or i in found]
        if members and fc.chunks_per_file:
            local = np.asarray(store.vectors[members]) @ qvec + rs.file_scoped_lexical * \
                lex[members]
            targets += [members[int(t)] for t in np.argsort(-local)[:fc.chunks_per_file]]
        for i in targets:
            if allowed is not None and not allowed[i]:
                continue
            c = get(i)
            c.fused += contrib
            c.why.append(f"file bm25 #{rank + 1}")


def _scope_channel(store: IndexStore, qvec: np.ndarray, rs, get, allowed, lex: np.ndarray,
                   scopes: tuple[str, ...]) -> None:
    """The files of the intent's scopes ranked among themselves (best chunk: similarity plus
    a little BM25, as inside a named file); each of the top files lends its reciprocal rank
    to its file entity and that chunk."""
    sc = rs.scope_channel
    if not sc.enabled or not scopes or not sc.weight:
        return
    cache = store.memo("scope_members")
    key = tuple(sorted(scopes))
    if key not in cache:
        cache[key] = np.asarray([i for i, r in enumerate(store.records)
                                 if r.scope in scopes and r.kind not in ("file", "module")],
                                dtype=np.int64)
    members = cache[key]
    if allowed is not None:
        members = members[allowed[members]]
    if not len(members):
        return
    local = np.asarray(store.vectors[members]) @ qvec + rs.file_scoped_lexical * lex[members]
    seen: set[str] = set()
    for j in np.argsort(-local):
        i = int(members[int(j)])
        path = store.records[i].path
        if path in seen:
            continue
        seen.add(path)
        contrib = sc.weight / (rs.rrf_k + len(seen))
        for t in (store.file_record_index(path), i):
            if t is not None and (allowed is None or allowed[t]):
                c = get(t)
                c.fused += contrib
                c.why.append(f"in-scope #{len(seen)}")
        if len(seen) >= sc.top_files:
            break


_PROGRAM = re.compile(r"\s*program\s+\w", re.I)  # a Fortran main program's statement


def entry_files(store: IndexStore) -> frozenset[str]:
    """The files that hold a program's entry point: a C-family `main` or a Fortran main
    program, told by the unit's statement (its signature: the chunk's text opens with the
    comment before it) (once per loaded index)."""
    memo = store.memo("entry_files")
    if "files" not in memo:
        memo["files"] = frozenset(
            r.path for r in store.records if r.kind == "function" and (
                r.name == "main" or (PurePosixPath(r.path).suffix.lower() in FORTRAN_EXT
                                     and _PROGRAM.match(r.signature or ""))))
    return memo["files"]


def _third_party(store: IndexStore, rr) -> tuple[str, ...]:
    """Folders of the index that hold another project's copy (`rerank.third_party_roots`),
    found once per loaded index."""
    from .rerank import foreign_notice_roots, third_party_roots

    memo = store.memo("third_party")
    key = (tuple(rr.third_party_markers), rr.third_party_notice, rr.third_party_own_parts)
    if key not in memo:
        roots = third_party_roots(store.manifest.files, frozenset(key[0]), store.repo_text,
                                  own_parts=rr.third_party_own_parts)
        if rr.third_party_notice:
            head = lambda p: (store.repo_text(p) or "")[:2000]  # noqa: E731  (a notice opens a file)
            roots = tuple(sorted(set(roots) | set(foreign_notice_roots(store.manifest.files,
                                                                      head, frozenset(key[0])))))
        memo[key] = roots
    return memo[key]


def _trivial_file(store: IndexStore, path: str, trivial_lines: int) -> bool:
    """A code file of trivial definitions only (`rerank.low_signal`: empty bodies, no
    comments). A header of declarations is not one: it lists an interface."""
    memo = store.memo("trivial_file")
    if path not in memo:
        members = [store.records[i] for i in store.members(path)]
        memo[path] = bool(members) and all(
            m.kind in CODE_KINDS and m.kind != "declaration" and not m.is_declaration
            and low_signal(m, trivial_lines) for m in members)
    return memo[path]


def _is_data_file(store: IndexStore, path: str, programs: frozenset[str]) -> bool:
    """A text file in a format of the repository's own, named by its extension (input decks
    `in.lj`, reference outputs `*.out`, parameter files): chunked as a script (line windows)
    in a language that is no program language. Extensionless files are not counted (run
    scripts often have neither extension nor shebang)."""
    memo = store.memo("data_file")
    if path not in memo:
        suffix = PurePosixPath(path).suffix.lower().lstrip(".")
        langs = {store.records[i].language for i in store.members(path)
                 if store.records[i].kind == "script"}
        memo[path] = bool(suffix) and suffix in langs and not langs & programs
    return memo[path]


@dataclass
class FileCap:
    """At most `limit` distinct files of a kind (`holds`) in one answer."""

    holds: Callable[[Chunk], bool]
    limit: int
    shown: set[str] = field(default_factory=set)


def select(store: IndexStore, ranked: list[Candidate], k: int, max_per_file: int,
           same_file_penalty: float = 0.0, max_per_name: int | None = None,
           pool_size: int = 40, replace_modules: bool = False,
           one_of_identical: bool = False, mirror_share: float = 2.0,
           caps: list[FileCap] = (), trivial_lines: int = 0,
           one_thing: Callable[[str, str], bool] | None = None,
           max_variants: int | None = None, variant_head: int | None = None
           ) -> list[Candidate]:
    """Greedy pick: no duplicates (a part whose whole is shown, the same lines twice), at most
    `max_per_file` per file, and each further chunk of an already shown file pays a penalty so
    that distinct relevant files surface before a third chunk of the same file. Files with the
    same name in different folders (parallel ports, per-backend copies) are one family
    (`ports.families`; code also across dialects: `sim.c`, `sim.cu`, `sim.cpp`): at most
    `max_per_name` of its files are shown, so they do not crowd out the other files.
    For code files the name alone makes the family; other files (build scripts, input decks)
    join it only when their folders mirror each other (`mirrored`): a CMakeLists.txt per
    sub-folder is one build file each, a model.cmake per port folder is one answer. Each of
    `caps` bounds the files of one kind (data files, documents). With `one_thing`, a code file
    joins its name's family only when it is one thing with a member shown (`ports.same_code`:
    a port or a copy, not a driver beside the kernel of the same name). With
    `max_variants`, a folder's build-file variants (`ports.build_variant_key`: Make.Linux,
    Make.Mac) are a family of at most that many files among the first `variant_head` picks
    (None: all); the others wait until then."""
    chosen: list[Candidate] = []
    seen_ranges: set[tuple] = set()
    chosen_ids: set[str] = set()
    per_file: dict[str, int] = defaultdict(int)
    per_name: dict[str, set[str]] = defaultdict(set)
    copy_of: dict[str, str] = {}  # content hash -> the file shown for it
    content = store.manifest.files  # path -> sha256 of the file's bytes
    size = max(4 * k, pool_size)
    pool, rest = list(ranked[:size]), ranked[size:]
    waiting: list[Candidate] = []  # build variants held back from the first picks
    while len(chosen) < k:
        if waiting and variant_head is not None and len(chosen) >= variant_head:
            pool += waiting
            waiting = []
        if not pool:
            # Copies, ports and capped kinds can use up the pool (a code with a dozen port
            # folders): the next candidates fill the answer, rather than a short one.
            if not rest:
                break
            pool, rest = list(rest[:size]), rest[size:]
        best, best_score = None, None
        for c in pool:
            r = store.records[c.idx]
            eff = c.score - same_file_penalty * per_file[r.path]
            if best_score is None or eff > best_score:
                best, best_score = c, eff
        pool.remove(best)
        r = store.records[best.idx]
        if r.kind == "file" and per_file[r.path] + 1 >= max_per_file:
            # The file's last slot: show the file through its best own chunk in the pool (a
            # symbol with exact lines says more than the whole file's summary).
            # A bare declaration is not that chunk: its definition elsewhere carries it.
            # Nor is a trivial one (a one-line destructor): the context filter would drop it
            # as carried by its class, and the file would vanish from the answer.
            inner = [c for c in pool if store.records[c.idx].path == r.path
                     and store.records[c.idx].kind not in ("file", "call_chain", "declaration")
                     and not store.records[c.idx].is_declaration
                     and not (trivial_lines and low_signal(store.records[c.idx], trivial_lines))]
            if not inner and trivial_lines and _trivial_file(store, r.path, trivial_lines) \
                    and not any(w.startswith(("file named", "sibling")) for w in best.why):
                # Nothing but empty bodies and declarations (a base class's stub file): the
                # summary of such a file says nothing either, unless the question names it.
                continue
            if inner:
                pool.append(best)
                whole = best
                best = max(inner, key=lambda c: c.score)
                pool.remove(best)
                r = store.records[best.idx]
                # What found the file (an exact token, the file list) still explains the pick.
                best.why += [f"(its file) {w}" for w in whole.why
                             if w.startswith(("exact", "file bm25", "file named", "sibling"))]
        if r.kind == "module" and replace_modules:
            # A folder is shown through its best file in the pool: a container entity
            # fills a slot that the file it summarises should take.
            prefix = r.path.rstrip("/") + "/"
            inner = [c for c in pool if store.records[c.idx].path.startswith(prefix)
                     and store.records[c.idx].kind != "module"
                     and per_file[store.records[c.idx].path] < max_per_file]
            if inner:
                best = max(inner, key=lambda c: c.score)
                pool.remove(best)
                r = store.records[best.idx]
        # A call-chain entity spans its root function's lines but says something else.
        key = (r.path, r.start_line, r.end_line, r.kind == "call_chain")
        variant = build_variant_key(store, r.path) if max_variants else None
        name = variant or family_key(store, r.path)
        if variant:
            family = per_name[name]
            if r.path not in family and len(family) >= max_variants:
                if variant_head is not None and len(chosen) < variant_head:
                    waiting.append(best)
                if variant_head is None or len(chosen) < variant_head:
                    continue
        elif not is_code_name(name):
            family = {p for p in per_name[name] if mirrored(store, p, r.path, mirror_share)}
        elif one_thing is not None:
            family = {p for p in per_name[name] if p == r.path or one_thing(p, r.path)}
        else:
            family = per_name[name]
        capped = [cap for cap in caps if cap.holds(r)]
        if any(r.path not in cap.shown and len(cap.shown) >= cap.limit for cap in capped):
            continue
        if key in seen_ranges or (r.parent_id and r.parent_id in chosen_ids) \
                or per_file[r.path] >= max_per_file \
                or (not variant and max_per_name and r.path not in family
                    and len(family) >= max_per_name) \
                or (one_of_identical and copy_of.get(content.get(r.path, r.path), r.path)
                    != r.path):
            continue
        seen_ranges.add(key)
        chosen_ids.add(r.id)
        per_file[r.path] += 1
        per_name[name].add(r.path)
        for cap in capped:
            cap.shown.add(r.path)
        copy_of.setdefault(content.get(r.path, r.path), r.path)
        chosen.append(best)
    return chosen


def plainest_variants(store: IndexStore, chosen: list[Candidate], question_tokens: list[str],
                      qvec: np.ndarray, rules: PortRules) -> list[Candidate]:
    """A pick from a family of parallel ports (the same file name in sibling folders, most of
    the same functions in each) is shown in its plainest member (`_plainest`): the variants
    give one answer, and the one with the least platform code teaches it best. The
    chunk shown is the same-named one there, else the one closest to the question. A port
    whose folder the question names ("the CUDA port", "the OpenMP version" for omp/) is shown
    instead: the pick itself when it is that port."""
    asked = set(question_tokens)
    shown = {store.records[c.idx].path for c in chosen}
    out = []
    for c in chosen:
        twin = plainest_twin(store, store.records[c.idx], asked, shown, qvec, rules)
        if twin is None:
            out.append(c)
            continue
        shown.add(store.records[twin].path)
        out.append(Candidate(idx=twin, score=c.score, evidence_class=c.evidence_class,
                             why=[*c.why, f"plainest of its same-named files (found in "
                                          f"{store.records[c.idx].path})"]))
    return out


def docs_after(store: IndexStore, chosen: list[Candidate], n: int,
               named: set[str] = frozenset()) -> list[Candidate]:
    """Documents give their places among the first `n` to code: a README matches every
    question's words, while the question asks where and how the code does it. A document
    the question names (`named`) keeps its place."""
    moved = lambda c: store.records[c.idx].scope == "docs" \
        and store.records[c.idx].path not in named  # noqa: E731
    out: list[Candidate] = []
    held: list[Candidate] = []  # documents found among the first n, held back
    code = 0
    for c in chosen:
        if code < n and moved(c):
            held.append(c)
            continue
        out.append(c)
        code += 1
        if code == n and held:
            for d in held:
                d.why.append(f"document (shown after the first {n} code results)")
            out += held
            held = []
    return out + held


def other_ports_last(store: IndexStore, pool: list[Candidate], question_tokens: list[str],
                     rules: PortRules, share: float, min_shared: int,
                     docs_stay: bool = False) -> list[Candidate]:
    """One answer stays in one port: picks from the files of other port folders that the
    question does not name (`ports.other_port`) follow the rest, in their order. With
    `docs_stay`, a document there keeps its place (it describes that port, it copies nothing)."""
    asked = set(question_tokens)

    def elsewhere(c: Candidate) -> bool:
        r = store.records[c.idx]
        return not (docs_stay and r.scope == "docs") \
            and other_port(store, r.path, asked, rules, share, min_shared)
    return follow_the_rest(pool, elsewhere, "file of another port (shown after the rest)")


def follow_the_rest(pool: list[Candidate], moved: Callable[[Candidate], bool],
                    note: str) -> list[Candidate]:
    """The picks that `moved` holds follow the others, both in their order; each says why."""
    later = [c for c in pool if moved(c)]
    for c in later:
        c.why.append(note)
    return [c for c in pool if c not in later] + later


def _file_caps(store: IndexStore, rs, question: str, wanted: list[str],
               named: frozenset[str] = frozenset()) -> list[FileCap]:
    """Data files (decks, reference outputs: `max_data_files`, or `max_data_files_asked`
    when the question asks about them), and documents (`max_doc_files`) unless it asks for
    documentation. A file the question names (`named`, with `rs.named_files_uncapped`) is never capped: "instead of
    editing params.dat" asks about that file."""
    caps = []
    free = named if rs.named_files_uncapped else frozenset()

    def counted(holds: Callable[[Chunk], bool]) -> Callable[[Chunk], bool]:
        return lambda r: r.path not in free and holds(r)

    asked = cue_pattern(rs.data_cue).search(question.lower()) is not None
    limit = rs.max_data_files_asked if asked else rs.max_data_files
    if limit is not None:
        programs = frozenset(rs.program_languages)
        caps.append(FileCap(counted(lambda r: _is_data_file(store, r.path, programs)), limit))
    if rs.max_doc_files is not None and "documentation" not in wanted:
        caps.append(FileCap(counted(lambda r: r.scope == "docs"), rs.max_doc_files))
    return caps


def allowed_mask(store: IndexStore, kinds: list[str] | None, paths: list[str] | None
                 ) -> np.ndarray | None:
    if not kinds and not paths:
        return None
    mask = np.ones(len(store.records), dtype=bool)
    if kinds:
        ks = set(kinds)
        mask &= np.array([r.kind in ks for r in store.records])
    if paths:
        inside = path_filter(paths)
        mask &= np.array([inside(r.path) for r in store.records])
    return mask


def path_filter(paths: list[str]):
    """The one rule for "only files under these paths": a path is in scope when it is one of
    them or lies below one ('src' takes src/x.cpp, not srcX/y.cpp)."""
    exact = frozenset(p.strip("/") for p in paths)
    below = tuple(p + "/" for p in exact)
    return lambda path: path in exact or path.startswith(below)


def search(store: IndexStore, embedder, question: str, settings: Settings, k: int | None = None,
           kinds: list[str] | None = None, paths: list[str] | None = None,
           trace: Trace | None = None) -> list[SearchHit]:
    from .context import filter_context
    from .expand import expand
    from .rerank import cross_encode, rerank
    from .routing import classify

    k = k or settings.retrieval.k
    rs = settings.retrieval
    qa = analyze(question, store, rs.weak_symbol_confidence, rs.acronym_symbol_confidence,
                 rs.weak_symbol_max_defs, rs.weak_symbol_min_chars, rs.kind_noun_cue,
                 rs.kind_noun_qualifiers, rs.kind_noun_confidence, rs.short_forms,
                 rs.short_form_ratio)
    qa.intent, qa.profile, qa.wanted = classify(qa, settings.routing)
    rule = settings.routing.intents.get(qa.intent) if settings.routing.enabled else None
    qvec = embedder.embed([question])[0]
    allowed = allowed_mask(store, kinds, paths)
    cands = gather_candidates(store, qvec, qa, settings, allowed,
                              rule.file_channel_weight if rule else None,
                              tuple(rule.scope_channel) if rule else ())
    ranked = sorted(cands.values(), key=lambda c: -c.score)
    if settings.rerank.enabled:
        rerank(ranked, store.records, qa.tokens, rule, qa.intent, qa.wanted, settings.rerank,
               store.lexical.idf, _third_party(store, settings.rerank), entry_files(store))
        ranked.sort(key=lambda c: -c.score)
    if settings.cross_encoder.model:
        cross_encode(ranked, store.records, question, settings.cross_encoder)
        ranked.sort(key=lambda c: -c.score)
    if sibling_contest(store, ranked, qa.tokens, rs.sibling_words):
        ranked.sort(key=lambda c: -c.score)
    added = []
    if settings.expansion.enabled and allowed is None:
        added = expand(store, cands, ranked, qvec, qa.profile, settings.expansion,
                       lambda i: Candidate(idx=i), frozenset(qa.named_files),
                       bool(cue_pattern(settings.expansion.macro_cue).search(question.lower())))
        ranked = sorted(cands.values(), key=lambda c: -c.score)
    # Select generously, then let the context filter drop what stronger chunks already carry.
    per_file = rule.max_per_file if rule and rule.max_per_file else rs.max_per_file
    if allowed is not None:  # a kind/path-filtered listing, not a multi-file answer
        per_file = max(per_file, rs.filtered_max_per_file)
    pool = select(store, ranked, k * 2, per_file, rs.same_file_penalty, rs.max_per_name,
                  rs.select_pool, rs.modules_as_files and "module" not in qa.wanted,
                  rs.one_of_identical, rs.mirror_share,
                  [] if allowed is not None else
                  _file_caps(store, rs, question, qa.wanted, frozenset(qa.named_files)),
                  settings.rerank.trivial_lines if rs.skip_trivial_inner else 0,
                  (lambda a, b: same_code(store, a, b, rs.port_share, rs.port_qualified_names))
                  if rs.name_family_ports else None, rs.max_build_variants,
                  rs.build_variant_head)
    # The question's words as they name port and version folders ("C++" names cpp/).
    languages = language_words(question, rs.language_words)
    folder_asks = qa.tokens + languages
    if rs.plainest_variant:
        asked = question.lower()
        threads = rs.thread_constructs if cue_pattern(rs.thread_cue).search(asked) and not \
            cue_pattern(rs.device_cue).search(asked) else ""
        rules = PortRules(rs.port_share, settings.collect.max_file_bytes, rs.plainest_port,
                          rs.device_constructs, threads, rs.reference_port_cue,
                          rs.enclosing_reference, rs.named_port_tie_plainest,
                          rs.enclosed_variants, rs.lone_reference, rs.port_qualified_names)
        pool = plainest_variants(store, pool, folder_asks, qvec, rules)
        if rs.plainest_port and rs.other_port_share <= 1 and not threads:
            # (Not for a threads question: the port shown then runs threads, not the plainest.)
            pool = other_ports_last(store, pool, folder_asks, rules, rs.other_port_share,
                                    rs.other_port_min_shared, rs.other_port_docs_stay)
    # The words as written name version folders and file variants: a stem abbreviates folder
    # words by accident ("multipli", the stem of "multiply", holds m-p-i in order). One letter
    # names a folder only through language_words (a lone "C"; the "c" of "C++" names no c/).
    written = set(re.findall(r"[a-z][a-z0-9]+", question.lower()))
    if rs.named_versions:
        unnamed = unnamed_versions(store, written, rs.other_port_min_shared,
                                   rs.version_word_share, settings.collect.max_file_bytes,
                                   frozenset(languages))
        below = tuple(f + "/" for f in unnamed)
        pool = follow_the_rest(  # (a version folder's own entity has the folder as its path)
            pool, lambda c: (p := store.records[c.idx].path) in unnamed or p.startswith(below),
            "file of a version the question does not name (shown after the rest)")
    if rs.named_variants:
        later = unnamed_variants(store, written | set(languages), rs.variant_text_share,
                                 settings.collect.max_file_bytes,
                                 {store.records[c.idx].path for c in pool})
        if later:
            pool = follow_the_rest(pool, lambda c: store.records[c.idx].path in later,
                                   "variant file the question does not name (shown after "
                                   "the rest)")
    dropped: list[tuple[int, str]] = []
    if settings.context_filter.enabled:
        keep, dropped = filter_context([store.records[c.idx] for c in pool],
                                       settings.context_filter, settings.rerank.trivial_lines)
        chosen = [pool[i] for i in keep]
    else:
        chosen = list(pool)
    if rs.doc_after and allowed is None and "documentation" not in qa.wanted \
            and not cue_pattern(rs.doc_slot_cue).search(question.lower()) \
            and not cue_pattern(settings.rerank.metadata_cue).search(question.lower()):
        chosen = docs_after(store, chosen, rs.doc_after, set(qa.files))
    chosen = chosen[:k]
    if trace is not None:
        _fill_trace(trace, store, qa, ranked, added, [(pool[i], why) for i, why in dropped])
    return [SearchHit(chunk=store.records[c.idx], score=round(c.score, 5), why=c.why,
                      evidence_class=c.evidence_class) for c in chosen]


def _fill_trace(trace: Trace, store: IndexStore, qa: QueryAnalysis, ranked: list[Candidate],
                added: list, dropped: list) -> None:
    trace.analysis = qa
    for c in ranked[:60]:
        r = store.records[c.idx]
        trace.rows.append({
            "chunk_id": r.id, "path": r.path, "start_line": r.start_line,
            "end_line": r.end_line, "symbol": r.qualified_name or r.name, "kind": r.kind,
            "dense_rank": c.dense_rank, "lexical_rank": c.lexical_rank,
            "score_before": c.score_before if c.score_before is not None else c.fused,
            "score": c.score, "class": c.evidence_class, "why": list(c.why)})
    for i, relation, seed in added:
        r = store.records[i]
        trace.expansions.append({"chunk_id": r.id, "relation": relation, "seed": seed})
    for c, why in dropped:
        trace.filtered.append({"chunk_id": store.records[c.idx].id, "reason": why})
