"""Structure graph: files, modules (folders) and symbols, with include/call/owns/inherits edges.

Resolution is conservative: an include resolves to a repository file only by path suffix; a
call (to a function or a function-like macro) resolves by qualified name, else by unqualified
name when the candidates can be narrowed to the same class, file or namespace, or are unique.
A call whose candidates are alternatives of one thing also resolves, to all of them: overrides
of one virtual method (classes with a common base: the call through a base pointer may reach
any of them) and one qualified name defined in several files (ports or build variants, one of
which the build links). Everything else is
counted as unresolved, never guessed, because wrong edges mislead retrieval more than missing
ones.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

from ..contracts.models import Chunk, Edge, FileRecord, GraphNode, ProjectStructure
from ..index.layout import file_node, module_node, sym_node

SYMBOL_KINDS = {"function", "method", "constructor", "destructor", "operator", "class", "struct",
                "union", "enum", "declaration", "macro", "typedef"}
CALLABLE = {"function", "method", "constructor", "destructor", "operator"}
# What a call can reach: a function-like macro is invoked like a function (the parser sees no
# preprocessor), and "who uses this macro" is the same question as "who calls this function".
CALL_TARGETS = CALLABLE | {"macro"}
TYPE_KINDS = {"class", "struct", "union", "enum"}
# More alternatives than this are not "the" implementations of a call but a name many
# unrelated things share; such a call stays unresolved.
MAX_ALTERNATIVES = 12


def module_of(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent


def _strip_templates(name: str) -> str:
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip()


class IncludeResolver:
    """Resolve `#include "a/b.h"` to repository files by path suffix, nearest folder first."""

    def __init__(self, paths: list[str]):
        self.by_name: dict[str, list[str]] = defaultdict(list)
        for p in paths:
            self.by_name[PurePosixPath(p).name].append(p)

    def resolve(self, includer: str, target: str) -> str | None:
        target = target.strip().lstrip("./")
        cands = [p for p in self.by_name.get(PurePosixPath(target).name, [])
                 if p == target or p.endswith("/" + target)]
        if not cands:
            return None
        here = module_of(includer)
        # Prefer the candidate sharing the longest folder prefix with the includer.
        return max(cands, key=lambda p: (len(_common_prefix(module_of(p), here)), -len(p)))


def _common_prefix(a: str, b: str) -> list[str]:
    out = []
    for x, y in zip(a.split("/"), b.split("/")):
        if x != y:
            break
        out.append(x)
    return out


def build_structure(files: list[FileRecord], chunks: list[Chunk],
                    includes: dict[str, list[str]]) -> ProjectStructure:
    nodes: dict[str, GraphNode] = {}
    edges: list[Edge] = []
    seen_edges: set[tuple[str, str, str]] = set()

    def edge(src: str, dst: str, typ: str) -> None:
        key = (src, dst, typ)
        if src != dst and key not in seen_edges:
            seen_edges.add(key)
            # (model_construct: ~10k edges per rebuild, built from validated chunks)
            edges.append(Edge.model_construct(source=src, target=dst, type=typ))

    # Files and the module tree.
    for f in files:
        nodes[file_node(f.path)] = GraphNode(id=file_node(f.path), type="file",
                                             name=PurePosixPath(f.path).name, path=f.path)
        mod = module_of(f.path)
        edge(module_node(mod), file_node(f.path), "contains")
        while True:
            if module_node(mod) not in nodes:
                nodes[module_node(mod)] = GraphNode(id=module_node(mod), type="module",
                                                    name=PurePosixPath(mod).name or ".", path=mod)
            if not mod:
                break
            parent = module_of(mod)
            edge(module_node(parent), module_node(mod), "contains")
            mod = parent

    symbols = [c for c in chunks if c.kind in SYMBOL_KINDS]
    by_qual: dict[str, list[Chunk]] = defaultdict(list)
    by_name: dict[str, list[Chunk]] = defaultdict(list)
    for c in symbols:
        nodes[sym_node(c.id)] = GraphNode(id=sym_node(c.id), type="symbol", name=c.name,
                                          path=c.path, kind=c.kind, qualified_name=c.qualified_name)
        edge(file_node(c.path), sym_node(c.id), "owns")
        if c.qualified_name:
            by_qual[c.qualified_name].append(c)
        by_name[c.name].append(c)

    # Class -> member (also out-of-line definitions in other files).
    types_by_qual = {q: [c for c in cs if c.kind in TYPE_KINDS] for q, cs in by_qual.items()}
    types_by_name: dict[str, list[Chunk]] = defaultdict(list)
    for c in symbols:
        if c.kind in TYPE_KINDS:
            types_by_name[c.name].append(c)
    for c in symbols:
        if not c.class_name or c.kind in TYPE_KINDS:
            continue
        owner_q = f"{c.namespace}::{c.class_name}" if c.namespace else c.class_name
        owners = types_by_qual.get(owner_q) or types_by_name.get(c.class_name, [])
        for owner in _nearest(owners, c.path)[:2]:
            edge(sym_node(owner.id), sym_node(c.id), "owns")

    # Inheritance.
    parents: dict[str, set[str]] = defaultdict(set)  # class name -> base class names
    for c in symbols:
        for base in c.bases:
            base_name = _strip_templates(base).split("::")[-1]
            if c.kind in TYPE_KINDS and base_name != c.name:
                parents[c.name].add(base_name)
            for target in _nearest(types_by_name.get(base_name, []), c.path)[:2]:
                if target.id != c.id:
                    edge(sym_node(c.id), sym_node(target.id), "inherits")
    ancestry = _Ancestry(parents)

    # Includes.
    resolver = IncludeResolver([f.path for f in files])
    unresolved_includes = 0
    for path, targets in includes.items():
        for t in targets:
            hit = resolver.resolve(path, t)
            if hit:
                edge(file_node(path), file_node(hit), "include")
            else:
                unresolved_includes += 1

    # Calls.
    definitions = {k: [c for c in v if c.kind in CALL_TARGETS and not c.is_declaration]
                   for k, v in by_name.items()}
    qual_defs = {k: [c for c in v if c.kind in CALL_TARGETS and not c.is_declaration]
                 for k, v in by_qual.items()}
    # Fortran names are case-insensitive, and C or C++ reaches a Fortran routine by its linker
    # name, usually lower case with a trailing underscore (`rhs4_` for `subroutine RHS4`).
    fortran_defs: dict[str, list[Chunk]] = defaultdict(list)
    for name, defs in definitions.items():
        for d in defs:
            if d.language == "fortran":
                fortran_defs[name.lower()].append(d)
    unresolved_calls = 0
    for c in chunks:
        if c.kind not in CALLABLE and c.kind != "function_part":
            continue
        caller = sym_node(c.parent_id if c.kind == "function_part" and c.parent_id else c.id)
        for raw in c.calls:
            targets = _resolve_call(_strip_templates(raw), c, definitions, qual_defs, ancestry) \
                or _resolve_call(raw.rstrip("_").lower(), c, fortran_defs, {}, ancestry)
            if not targets:
                unresolved_calls += 1
            for t in targets:
                edge(caller, sym_node(t.id), "call")

    counts: dict[str, int] = defaultdict(int)
    for n in nodes.values():
        counts[f"nodes.{n.type}"] += 1
    for e in edges:
        counts[f"edges.{e.type}"] += 1
    return ProjectStructure(nodes=list(nodes.values()), edges=edges, counts=dict(counts),
                            unresolved_calls=unresolved_calls,
                            unresolved_includes=unresolved_includes)


class _Ancestry:
    """A class and all its bases, transitively (by unqualified name; cycles are harmless)."""

    def __init__(self, parents: dict[str, set[str]]):
        self.parents = parents
        self.cache: dict[str, frozenset[str]] = {}

    def of(self, name: str) -> frozenset[str]:
        if name not in self.cache:
            seen, todo = {name}, [name]
            while todo:
                for b in self.parents.get(todo.pop(), ()):
                    if b not in seen:
                        seen.add(b)
                        todo.append(b)
            self.cache[name] = frozenset(seen)
        return self.cache[name]


def _file_local(c: Chunk) -> bool:
    """Internal linkage (static, anonymous namespace): no other file can call it."""
    return (not c.class_name and c.signature.lstrip().startswith("static ")) \
        or "(anonymous)" in c.namespace


def _nearest(cands: list[Chunk], path: str) -> list[Chunk]:
    """Of same-named types, those nearest to `path`: in its own folder, else sharing the
    longest folder prefix with it (order kept); all of them when none shares a folder. Ports
    repeat one class in sibling folders, and a port's member belongs to its own copy: the
    first copies by path would make another port's class its owner or base. (Calls keep
    every port's copy as alternatives: narrowing them cost two dev sets.)"""
    here = module_of(path)

    def near(c: Chunk) -> int:
        there = module_of(c.path)
        return 10_000 if there == here else len(_common_prefix(there, here)) if here else 0
    best = max(map(near, cands), default=0)
    return [c for c in cands if near(c) == best] if best else cands


def _alternatives(cands: list[Chunk], ancestry: _Ancestry) -> list[Chunk]:
    """All candidates when they are alternatives of one callee, else none (module docstring)."""
    if len(cands) > MAX_ALTERNATIVES:
        return []
    if len({c.qualified_name for c in cands}) == 1 and len({c.path for c in cands}) == len(cands) \
            and not any(_file_local(c) for c in cands):
        return sorted(cands, key=lambda c: c.path)
    classes = {c.class_name for c in cands}
    if all(classes) and len(classes) == len(cands):
        common = frozenset.intersection(*(ancestry.of(k) for k in classes))
        if common:
            return sorted(cands, key=lambda c: c.path)
    return []


def _resolve_call(name: str, caller: Chunk, definitions: dict[str, list[Chunk]],
                  qual_defs: dict[str, list[Chunk]], ancestry: _Ancestry) -> list[Chunk]:
    if not name:
        return []
    if "::" in name:
        exact = qual_defs.get(name) or [c for c in definitions.get(name.split("::")[-1], [])
                                        if c.qualified_name.endswith("::" + name)]
        if exact:
            return exact[:3]
        name = name.split("::")[-1]
    cands = definitions.get(name, [])
    if len(cands) <= 1:
        return cands
    for narrow in (
        lambda c: caller.class_name and c.class_name == caller.class_name,
        lambda c: c.path == caller.path,
        lambda c: caller.namespace and c.namespace == caller.namespace and not c.class_name,
    ):
        picked = [c for c in cands if narrow(c)]
        if picked:
            return picked[:3]
    return _alternatives(cands, ancestry)  # else ambiguous: unresolved rather than invented
