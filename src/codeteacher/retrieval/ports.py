"""Parallel ports: the same file names in sibling folders (serial, threaded and device
versions of one code). A port family is one answer, shown in one member: the port the question
names, else the plainest (the reference the others add platform code to), chosen per folder so
that one answer stays in one port.

Every per-index table here is computed once and kept in `IndexStore.memo`.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

import numpy as np

from ..contracts.models import FORTRAN_EXT, is_fixed_form
from ..index.lexical import tokenize
from ..index.store import IndexStore
from .query import CODE_EXT
from .rerank import HEADER_EXT
from .routing import cue_pattern


@dataclass(frozen=True)
class PortRules:
    """How ports are told apart and chosen (from settings)."""

    share: float = 0.5  # retrieval.port_share: shared functions that make two files ports
    max_bytes: int | None = None  # collect.max_file_bytes: files read for their words
    by_folder: bool = False  # retrieval.plainest_port: one port per answer
    device: str = ""  # retrieval.device_constructs: device-code lines ("" = not counted)
    threads: str = ""  # retrieval.thread_constructs when the question asks about CPU threads
    reference: str = ""  # retrieval.reference_port_cue: folder words of a reference port
    enclosing: bool = False  # retrieval.enclosing_reference: a port above the others leads
    tie_plainest: bool = False  # retrieval.named_port_tie_plainest: of ports named alike, plainest
    enclosed_variants: bool = False  # retrieval.enclosed_variants: sub-folder copies are variants
    lone: bool = False  # retrieval.lone_reference: a port without sibling ports leads
    qualified: bool = False  # retrieval.port_qualified_names: ports share qualified names


# Fortran files are ports' code as C-family ones are (`src/` and a port folder of the same
# Fortran files).
PORT_EXT = frozenset(CODE_EXT + FORTRAN_EXT)


@lru_cache(maxsize=50000)
def _dialect_key(path: str) -> str | None:
    pp = PurePosixPath(path)
    suffix = pp.suffix.lower()
    if suffix not in PORT_EXT:
        return None
    if suffix in FORTRAN_EXT:  # its own language: words of C and Fortran do not compare
        return pp.stem.lower() + ".f"
    return pp.stem.lower() + (".h" if suffix in HEADER_EXT else ".c")


def families(store: IndexStore) -> dict[str, list[str]]:
    """Family key -> the files of one family: files of one name in different folders, and
    code files of one stem whose extensions differ by port (`simulation.c`, `simulation.cu`,
    `simulation.cpp`), one per folder. Two headers of one stem in one folder (`X.h` declares,
    `X.hpp` defines) are a header pair, not ports: they keep their own names."""
    memo = store.memo("families")
    if not memo:
        groups: dict[str, list[str]] = {}
        for p in sorted(store.manifest.files):
            groups.setdefault(_dialect_key(p) or PurePosixPath(p).name, []).append(p)
        for key, paths in groups.items():
            folders = [PurePosixPath(p).parent.as_posix() for p in paths]
            if len(set(folders)) < len(folders):  # a pair in one folder: split by name
                for p in paths:
                    memo.setdefault(PurePosixPath(p).name, []).append(p)
            else:
                memo[key] = paths
    return memo


def family_key(store: IndexStore, path: str) -> str:
    """The key of `path`'s family in `families` (also for a bare file name)."""
    of = store.memo("family_of")
    if not of:
        of.update((p, key) for key, paths in families(store).items() for p in paths)
    if path in of:
        return of[path]
    dialect = _dialect_key(path)
    return dialect if dialect in families(store) else PurePosixPath(path).name


def build_variant_key(store: IndexStore, path: str) -> str | None:
    """The family of a build file that is one of several variants in its folder, told apart
    by a last dotted part (Make.Linux_MPI and Make.Mac_OMP, make.inc.gcc and make.inc.cray,
    Makefile.intel and Makefile.pgi): one platform's settings each, so one of them answers
    for all. A file without the part (the Makefile beside its variants) is its own."""
    memo = store.memo("build_variants")
    if not memo:
        memo[""] = None  # computed (a code without variants leaves the table empty)
        groups: dict[str, list[str]] = {}
        for p in store.manifest.files:
            pp = PurePosixPath(p)
            stem, dot, tail = pp.name.rpartition(".")
            if dot and stem and tail and any(store.records[i].scope == "build"
                                             for i in store.by_path.get(p, ())):
                groups.setdefault(f"{pp.parent.as_posix()}/{stem}.*", []).append(p)
        memo.update((p, key) for key, paths in groups.items() if len(paths) > 1 for p in paths)
    return memo.get(path)


@lru_cache(maxsize=50000)
def is_code_name(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in PORT_EXT


def mirrored(store: IndexStore, a: str, b: str, share: float) -> bool:
    """True when two same-named files sit in folders that mirror each other: the folders'
    file-name sets overlap by at least `share` (Jaccard), as parallel port folders do (each
    holds its own build file, kernels and headers under the same names)."""
    if share > 1:
        return False
    names = _folder_names(store)
    fa = names.get(PurePosixPath(a).parent.as_posix(), set())
    fb = names.get(PurePosixPath(b).parent.as_posix(), set())
    union = len(fa | fb)
    return union > 2 and len(fa & fb) >= share * union


def _port_name(r, qualified: bool) -> str:
    """The name ports compare a record by: qualified when `qualified` (ports implement one
    interface in one namespace, while modules that share a pattern, each package's
    config.cpp defining its own check_options, do so in namespaces of their own)."""
    return (r.qualified_name or r.name) if qualified else r.name


def code_names(store: IndexStore, path: str, qualified: bool) -> frozenset[str]:
    """The functions and classes a code file defines, by `_port_name` (once per file)."""
    cache = store.memo(f"code_names:{qualified}")
    if path not in cache:
        recs = [store.records[i] for i in store.members(path)]
        cache[path] = frozenset(_port_name(r, qualified) for r in recs if r.kind in _PORT_KINDS)
    return cache[path]


def same_code(store: IndexStore, a: str, b: str, share: float, qualified: bool) -> bool:
    """True when two same-named code files are one thing in two places (ports, copies): they
    define `share` of the smaller file's functions alike, or neither defines any (a header of
    macros). A driver and the kernel it calls, `driver/step.cpp` beside `kernel/step.cpp`,
    share a name but define different functions: two answers, not one."""
    na, nb = code_names(store, a, qualified), code_names(store, b, qualified)
    if not na or not nb:
        return not na and not nb
    return len(na & nb) >= share * min(len(na), len(nb))


def _folder_names(store: IndexStore) -> dict[str, set[str]]:
    """Folder -> the names of the files directly in it (once per loaded index)."""
    names = store.memo("folder_names")
    if not names:
        for p in store.manifest.files:
            pp = PurePosixPath(p)
            names.setdefault(pp.parent.as_posix(), set()).add(pp.name)
    return names


_PORT_KINDS = {"function", "method", "constructor", "destructor", "operator", "class", "struct"}


def _plainest(store: IndexStore, name: str, rules: PortRules = PortRules()) -> str | None:
    """The member of a same-named family with the least code of its own: the fewest distinct
    words that fewer than half of its siblings use (backend calls, pragmas, launch syntax),
    then the shortest. With `rules.by_folder`, the member in the plainest port folder
    (`_port_plainness`) comes first, so that one answer stays in one port. Computed once per
    family and loaded index."""
    name = family_key(store, name)
    cache = store.memo(f"plainest:{rules.by_folder}:{rules.device}:{rules.threads}:"
                       f"{rules.reference}:{rules.enclosing}:{rules.lone}")
    if name not in cache:
        own = _own_words(store, name, rules.max_bytes)
        if rules.threads:
            # A question about CPU threads is answered in a port that runs threads: the serial
            # reference has none to show.
            pat = cue_pattern(rules.threads)
            threaded = {p: n for p, n in own.items()
                        if pat.search(_code_text(store, p, rules.max_bytes))}
            own = threaded or own
        rank = _port_plainness(store, rules) if rules.by_folder else {}
        cache[name] = min(own, default=None, key=lambda p: (
            tuple(-x for x in rank.get(PurePosixPath(p).parent.as_posix(), (0.0, 0.0))),
            own[p], store.records[store.file_record_index(p)].end_line, p))
    return cache[name]


def _member_words(store: IndexStore, name: str, max_bytes: int | None) -> dict[str, Counter]:
    """Per indexed member of a same-named family: the counts of the words of its text."""
    name = family_key(store, name)
    cache = store.memo("member_words")
    if name not in cache:
        paths = [p for p in families(store).get(name, [])
                 if store.file_record_index(p) is not None]
        cache[name] = {p: Counter(tokenize(file_text(store, p, max_bytes))) for p in paths}
    return cache[name]


def _own_words(store: IndexStore, name: str, max_bytes: int | None) -> dict[str, int]:
    """Per member of a same-named code family: its distinct words that fewer than half of
    its siblings use."""
    name = family_key(store, name)
    cache = store.memo("own_words")
    if name not in cache:
        words = _member_words(store, name, max_bytes)
        used = Counter(t for ws in words.values() for t in ws)
        half = len(words) / 2
        cache[name] = {p: sum(1 for t in ws if used[t] - 1 < half) for p, ws in words.items()}
    return cache[name]


def _named_port(store: IndexStore, members: list[str], asked: set[str],
                max_bytes: int | None, rules: "PortRules | None" = None) -> str | None:
    """The member whose port folder the question names (`_port_namer`); of several (`omp/`
    and `omp-target/` for "OpenMP"), the one with the fewest folder words the question does
    not ask for; on a tie the plainest of them (`_port_plainness`, with `rules.tie_plainest`:
    "the OpenMP code" between openmp-threading/ and openmp-offload/ is the one without device
    code; before that, for a threads question, one that runs threads), else the first member
    (the pick)."""
    named = _port_namer(store, members, asked, max_bytes)
    rank = _port_plainness(store, rules) if rules and rules.by_folder and rules.tie_plainest \
        else {}
    plain = lambda p: tuple(-x for x in rank.get(PurePosixPath(p).parent.as_posix(), ()))  # noqa: E731
    # A threads question ("the OpenMP version") ties to a member that runs threads: in the
    # named port, a serial copy beside the threaded one has nothing to show.
    pat = cue_pattern(rules.threads) if rules and rules.threads else None
    runs = store.memo(f"runs_threads:{pat.pattern if pat else ''}")  # file -> it runs threads

    def idle(p: str) -> int:
        if pat is None:
            return 0
        if p not in runs:
            runs[p] = bool(pat.search(_code_text(store, p, max_bytes)))
        return 0 if runs[p] else 1
    fits = [(f, idle(p), plain(p), i, p) for i, p in enumerate(members)
            if (f := named(p)) is not None]
    return min(fits, default=(0, 0, (), 0, None))[4]


def _port_namer(store: IndexStore, members: list[str], asked: set[str],
                max_bytes: int | None):
    """`named(p)`: None unless the question names member p's port folder: a word of its
    folder that the other members' folders lack is a question word, or abbreviates one
    ('omp' / 'openmp'); then the number of its folder words the question does not ask for.
    A folder word that the other members' texts typically use at least half as often names
    what every port does (MPI calls in each port's comm.cpp), not this port ("on MPI ranks" is
    no request for the mpi-spec/ port)."""
    folders = {p: path_words(PurePosixPath(p).parent.as_posix()) for p in members}
    common = set.intersection(*folders.values())
    texts = _member_words(store, members[0], max_bytes)

    def shared(p: str, word: str) -> bool:
        others = sorted(ws[word] for q, ws in texts.items() if q != p)
        typical = others[len(others) // 2] if others else 0
        return typical > 0 and 2 * typical >= texts.get(p, Counter())[word]

    words = {p: set(re.findall(r"[a-z0-9]+", PurePosixPath(p).parent.as_posix().lower()))
             for p in members}
    common_words = set.intersection(*words.values())

    def named(p: str) -> int | None:
        own = folders[p] - common
        hit = {f for f in own if asks_for(f, asked) and not shared(p, f)}
        if not hit:
            return None
        # Unasked folder words counted as written, not as tokens: "threading" is one word,
        # though the tokenizer also gives its stem.
        return sum(1 for w in words[p] - common_words if not set(tokenize(w)) & hit)
    return named


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# Fortran comments run from "!" to the end of the line, and in fixed form a "c", "C" or "*"
# in column 1 opens a comment line; "!$" (or "c$", "*$" in column 1) opens a directive
# (`!$omp`, `!$acc`), which is code.
_FORTRAN_COMMENT = re.compile(r"!(?!\$)[^\n]*")
_FIXED_COMMENT_LINE = re.compile(r"^[cC*!](?!\$)[^\n]*", re.M)


def _port_plainness(store: IndexStore, rules: PortRules) -> dict[str, tuple[float, ...]]:
    """Per folder holding members of same-named code families, larger is plainer: (1 when it
    lies above the folders of the other members in most of its families (`rules.enclosing`:
    the main code at the top, its variants in sub-folders of it; with `rules.lone`, also a
    folder without sibling port folders against members that have some: src/ against
    ports/a/); 1 when its files carry the least device code per file of all such folders (`rules.device`, comments
    left out), else 0; the share of its families in which its member has the fewest words of
    its own, equally plain members sharing the win; 1 when a word of its path says it is the
    reference (`rules.reference`: "ref", "serial"), which decides between ports the code
    cannot tell apart, such as identical copies). A port is a folder. The reference port
    is the serial or CPU version that device ports add offload code to (or strip features
    from: then it has more words of its own, but still no device code), and it is plainest in
    most of its files, even where one file of another port happens to be shorter."""
    memo = store.memo(f"port_plainness:{rules.device}:{rules.reference}:{rules.enclosing}:"
                      f"{rules.lone}")
    if not memo:
        wins: Counter = Counter()
        seen: Counter = Counter()
        device: Counter = Counter()
        encloses: Counter = Counter()
        pat = cue_pattern(rules.device) if rules.device else None
        # A port folder without sibling port folders (src/ beside docs/ and ports/), against
        # ports that sit among sibling ports (ports/a, ports/b): the code they were made from.
        holding = {PurePosixPath(p).parent.as_posix() for n, ps in families(store).items()
                   if len(ps) > 1 and is_code_name(n) for p in ps}
        siblings = Counter(PurePosixPath(f).parent.as_posix() for f in holding)
        alone = lambda f: siblings[PurePosixPath(f).parent.as_posix()] == 1  # noqa: E731
        for name, paths in families(store).items():
            if len(paths) < 2 or not is_code_name(name):
                continue
            own = _own_words(store, name, rules.max_bytes)
            if len(own) < 2:
                continue
            for p in own:
                folder = PurePosixPath(p).parent.as_posix()
                seen[folder] += 1
                if pat is not None:
                    device[folder] += sum(1 for ln in _code_text(store, p, rules.max_bytes)
                                          .splitlines() if pat.search(ln))
            folders = [PurePosixPath(p).parent.as_posix() for p in own]
            for f in folders:
                if rules.enclosing and all(_encloses(f, g) or (rules.lone and alone(f)
                                                          and not alone(g))
                                           for g in folders if g != f):
                    encloses[f] += 1
            # Members equally plain (identical copies, most often) share the win: a tie
            # broken by path would crown whichever folder sorts first.
            least = min(own.values())
            tied = [p for p in own if own[p] == least]
            for p in tied:
                wins[PurePosixPath(p).parent.as_posix()] += 1 / len(tied)
        per_file = {f: device[f] / n for f, n in seen.items()}
        fewest = min(per_file.values(), default=0.0)
        named = cue_pattern(rules.reference) if rules.reference else None
        memo.update({f: (float(encloses[f] > n / 2), float(per_file[f] == fewest), wins[f] / n,
                         float(bool(named and named.search(" ".join(tokenize(f))))))
                     for f, n in seen.items()})
    return memo


def _encloses(a: str, b: str) -> bool:
    """Folder `a` lies above folder `b` ('.' is the root)."""
    return a != b and (a == "." or b.startswith(a + "/"))


def _code_text(store: IndexStore, path: str, max_bytes: int | None) -> str:
    """The file's text with its comments left out: a commented-out call is no code."""
    text = file_text(store, path, max_bytes)
    if PurePosixPath(path).suffix.lower() not in FORTRAN_EXT:
        return _COMMENT.sub(" ", text)
    if is_fixed_form(path, text):
        text = _FIXED_COMMENT_LINE.sub(" ", text)
    return _FORTRAN_COMMENT.sub(" ", text)


def file_text(store: IndexStore, path: str, max_bytes: int | None) -> str:
    text = store.repo_text(path, max_bytes)
    if text is None:  # repository moved since indexing: what the records hold of it
        return "\n".join(store.records[i].text for i in store.members(path))
    return text


def asks_for(folder_word: str, asked: set[str]) -> bool:
    """The question names a folder word: as one of its words, or by a word it abbreviates."""
    return folder_word in asked or any(abbreviates(folder_word, w) for w in asked)


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
                  rules: PortRules) -> int | None:
    """The record to show instead of `r` when `r` is a member of a port family: the same
    chunk in the port the question names, else in the plainest port; None to keep `r`."""
    name = family_key(store, r.path)
    family = [p for p in families(store).get(name, []) if p != r.path]
    if not family:
        return None
    if not is_code_name(name):
        return _plainest_port_file(store, r, family, asked, shown, qvec, rules) \
            if rules.by_folder else None
    # A port the question names ("the OpenMP version": folder omp) is the one shown; else the
    # plainest member.
    asked_for = _named_port(store, [r.path, *family], asked, rules.max_bytes, rules)
    if asked_for == r.path:
        return None
    plain = asked_for or _plainest(store, name, rules)
    if plain is None or plain == r.path or plain in shown:
        return None
    code = [i for i in store.members(plain) if store.records[i].kind in _PORT_KINDS]
    # Qualified names when asked (retrieval.port_qualified_names, `_port_name`).
    names = code_names(store, plain, rules.qualified)
    mine = {_port_name(store.records[i], rules.qualified) for i in store.members(r.path)}
    same = [i for i in code if store.records[i].name == r.name and store.records[i].kind == r.kind]
    # A copy in a sub-folder of the plainest member's folder is a variant of it (it adds a
    # feature to the main code above it), however many functions it adds: its chunk is shown
    # in the main code when that has the same symbol.
    variant = rules.enclosed_variants and bool(same) and _encloses(
        PurePosixPath(plain).parent.as_posix(), PurePosixPath(r.path).parent.as_posix())
    # A test's main.cpp is no port of the program's main.cpp, whatever names they share.
    if not variant and (not names or len(names & mine) < rules.share * len(names)) \
            or _scope(store, plain) != r.scope:
        # Not ports of one thing (different files that share a name); r may still have
        # identical copies, shown in the plainest port folder's copy.
        return _plainest_copy(store, r, family, shown, rules)
    if same:
        return same[0]
    if r.kind == "file":
        return store.file_record_index(plain)
    sims = np.asarray(store.vectors[code]) @ qvec
    return code[int(np.argmax(sims))]


def _scope(store: IndexStore, path: str) -> str:
    i = store.file_record_index(path)
    return store.records[i].scope if i is not None else ""


def _plainest_copy(store: IndexStore, r, family: list[str], shown: set[str],
                   rules: PortRules) -> int | None:
    """The same record in the copy of r's file (byte-identical) whose folder is plainest, when
    that is not r's own: the reference copy rather than the copy that scored best."""
    digest = store.manifest.files.get(r.path)
    copies = [p for p in family if digest and store.manifest.files.get(p) == digest]
    if not copies or not rules.by_folder:
        return None
    rank = _port_plainness(store, rules)
    parent = lambda p: rank.get(PurePosixPath(p).parent.as_posix(), ())  # noqa: E731
    best = max(copies, key=parent)
    if parent(best) <= parent(r.path) or best in shown:
        return None
    if r.kind == "file":
        return store.file_record_index(best)
    same = [i for i in store.members(best) if store.records[i].name == r.name
            and store.records[i].kind == r.kind and store.records[i].start_line == r.start_line]
    return same[0] if same else None


def _plainest_port_file(store: IndexStore, r, family: list[str], asked: set[str],
                        shown: set[str], qvec: np.ndarray, rules: PortRules) -> int | None:
    """A build script or deck of a port folder (same name in mirrored folders) is shown in
    the copy of the port the question names, else in the plainest port folder's copy."""
    rank = _port_plainness(store, rules)  # (threads do not move build scripts and decks)
    parent = lambda p: PurePosixPath(p).parent.as_posix()  # noqa: E731
    if parent(r.path) not in rank:
        return None
    ports = [p for p in family if parent(p) in rank and mirrored(store, p, r.path, rules.share)]
    if not ports:
        return None
    best = _named_port(store, [r.path, *ports], asked, rules.max_bytes, rules)
    if best == r.path:
        return None
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


def other_port(store: IndexStore, path: str, asked: set[str], rules: PortRules,
               share: float, min_shared: int = 2) -> bool:
    """True for a file of a port folder other than the plainest one (a folder whose file
    stems overlap the plainest folder's by at least `share`, Jaccard, and in `min_shared`
    stems at least: one shared name does not make two folders ports) that the question does
    not name: its files (an override, a backend helper, a second copy that the family cap
    lets through) belong to another port's answer, not to the one shown."""
    rank = _port_plainness(store, rules)
    folder = PurePosixPath(path).parent.as_posix()
    if folder not in rank:
        return False
    plain = max(rank, key=rank.get)  # the first of equally plain folders, as before
    if rank[folder] == rank[plain]:  # equally plain: one of the plainest itself
        return False
    a, b = _folder_stems(store, folder), _folder_stems(store, plain)
    # A variant in a sub-folder of the main code repeats most of its own names, while the
    # main folder also holds the project's docs and metadata: measured against its own.
    whole = len(a) if rules.enclosing and _encloses(plain, folder) else len(a | b)
    if len(a & b) < max(min_shared, share * whole):
        return False
    own = path_words(folder) - path_words(plain)
    return not any(asks_for(f, asked) for f in own)


def variant_folders(store: IndexStore, min_shared: int) -> dict[str, tuple[str, ...]]:
    """Sibling folders that hold versions of one program, in any languages (`c/`, `cpp/` and
    `fortran/` beside each other, each with its own app_serial and app_mpi): folder -> its
    group, itself included. Two siblings are versions when the source files below them share
    `min_shared` stems; extensions are not compared, so a C, a Fortran and a Julia version are
    one group. No share of the folders is asked for: a version may carry a library of its
    own (a vendored portability layer) that the others lack."""
    memo = store.memo(f"variant_folders:{min_shared}")
    if "groups" not in memo:
        below: dict[str, set[str]] = {}
        for r in store.records:
            if r.kind != "file" or r.scope != "src":
                continue
            pp = PurePosixPath(r.path)
            # A header and a source of one stem are an interface and its implementation
            # (include/x.h, src/x.cpp), not two versions: headers compare with headers.
            key = pp.stem.lower() + (".h" if pp.suffix.lower() in HEADER_EXT else "")
            for d in range(1, len(pp.parts)):
                below.setdefault("/".join(pp.parts[:d]), set()).add(key)
        kids: dict[str, list[str]] = {}
        for f in below:
            kids.setdefault(PurePosixPath(f).parent.as_posix(), []).append(f)

        def versions(a: str, b: str) -> bool:
            return len(below[a] & below[b]) >= min_shared
        groups: dict[str, tuple[str, ...]] = {}
        for folders in kids.values():
            linked = tuple(sorted(f for f in folders if any(versions(f, g) for g in folders
                                                              if g != f)))
            if len(linked) >= 2:
                groups.update((f, linked) for f in linked)
        memo["groups"] = groups
    return memo["groups"]


def path_words(folder: str) -> set[str]:
    """The words of a folder path as a question can name them: its tokens, and one-letter
    names too (`c/` is the C version, named through `retrieval.language_words`)."""
    return set(tokenize(folder)) | {w for w in re.findall(r"[a-z0-9+]+", folder.lower())
                                    if len(w) == 1 or w.endswith("+")}


def unnamed_versions(store: IndexStore, asked: set[str], min_shared: int, common_share: float,
                     max_bytes: int | None = None,
                     languages: frozenset[str] = frozenset()) -> frozenset[str]:
    """The version folders whose picks follow the rest: when a question names some of a
    group of version folders ("in the Fortran version", "the C code"), the group's other
    folders; none when it names none, or all. A language the question names (`languages`,
    from `language_words`) always names its folder; another word does unless every version
    uses it (`_common_word`)."""
    groups = variant_folders(store, min_shared)
    named = {f for f, group in groups.items()
             if any(w in languages or (asks_for(w, asked) and not _common_word(
                 store, w, f, group, common_share, max_bytes))
                    for w in path_words(PurePosixPath(f).name))}
    return frozenset(f for f, group in groups.items() if f not in named
                     and any(g in named for g in group))


def _common_word(store: IndexStore, word: str, folder: str, group: tuple[str, ...],
                 share: float, max_bytes: int | None) -> bool:
    """A folder word that `share` of the other versions' files use in their text names what
    every version does ("across MPI ranks" is no request for the mpi/ version when the
    reference calls MPI too). Read only for the words a question names, once per index."""
    memo = store.memo(f"common_word:{share}")
    key = (word, folder)
    if key not in memo:
        pat = re.compile(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", re.I)
        below = tuple(g + "/" for g in group if g != folder)
        paths = [p for p in store.manifest.files if p.startswith(below)]
        using = sum(1 for p in paths if pat.search(file_text(store, p, max_bytes)))
        memo[key] = bool(paths) and using >= share * len(paths)
    return memo[key]


def language_words(question: str, patterns: dict[str, list[str]]) -> list[str]:
    """Folder words for the programming languages a question names in ways the tokenizer
    loses ("C++", a lone "C"): `retrieval.language_words`, pattern -> words."""
    return [w for pat, words in patterns.items() if cue_pattern(pat).search(question)
            for w in words]


def _folder_stems(store: IndexStore, folder: str) -> set[str]:
    stems = store.memo("folder_stems")
    if folder not in stems:
        stems[folder] = {PurePosixPath(n).stem.lower()
                         for n in _folder_names(store).get(folder, set())}
    return stems[folder]
