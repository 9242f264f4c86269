"""Entity stage: file, module and call-chain descriptions derived from the code alone.

These let retrieval answer "what does X.h do?" or "what is in folder Y?" before any LLM has
explained anything; the explanation stage later adds model-written summaries on top.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import PurePosixPath

from ..contracts.models import Chunk, Entity, FileRecord, ProjectStructure
from ..index.layout import chain_id, file_node, module_node, node_chunk, node_path, sym_node
from .graph import CALLABLE, TYPE_KINDS, module_of

MAX_LIST = 24  # names listed per category; beyond that a count is given


def _names(items: list[str]) -> str:
    uniq = list(dict.fromkeys(i for i in items if i))
    more = len(uniq) - MAX_LIST
    return ", ".join(uniq[:MAX_LIST]) + (f" (+{more} more)" if more > 0 else "")


def _hash(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "replace"))
        h.update(b"\0")
    return h.hexdigest()


def _first_sentences(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def file_entity(f: FileRecord, chunks: list[Chunk], leading_comment: str,
                includes: list[str], included_by: list[str]) -> Entity:
    types = [c for c in chunks if c.kind in TYPE_KINDS]
    funcs = [c for c in chunks if c.kind in CALLABLE and not c.class_name]
    methods = [c for c in chunks if c.kind in CALLABLE and c.class_name]
    decls = [c for c in chunks if c.kind == "declaration"]
    sections = [c for c in chunks if c.kind == "doc_section"]
    name = PurePosixPath(f.path).name
    lines = [f"File {f.path} ({f.language} {f.category}, {f.scope} scope, {f.lines} lines)."]
    if leading_comment:
        lines.append(f"Header comment: {_first_sentences(leading_comment)}")
    if types:
        lines.append("Defines types: " + _names([f"{c.kind} {c.qualified_name or c.name}"
                                                 for c in types]) + ".")
        docs = [f"{c.name}: {_first_sentences(c.comment, 160)}" for c in types if c.comment]
        if docs:
            lines.append("Type notes: " + " | ".join(docs[:6]))
    if funcs:
        lines.append("Functions: " + _names([c.qualified_name or c.name for c in funcs]) + ".")
    if methods:
        by_class: dict[str, list[str]] = defaultdict(list)
        for c in methods:
            by_class[c.class_name].append(c.name)
        lines.append("Member functions: " + "; ".join(
            f"{cls}: {_names(ns)}" for cls, ns in list(by_class.items())[:8]) + ".")
    if decls:
        lines.append("Declares: " + _names([c.name for c in decls]) + ".")
    if sections:
        lines.append("Sections: " + _names([c.name for c in sections]) + ".")
    if includes:
        lines.append("Includes: " + _names(includes) + ".")
    if included_by:
        lines.append("Included by: " + _names(included_by) + ".")
    text = "\n".join(lines)
    return Entity(id=file_node(f.path), level="file", path=f.path, title=name, text=text,
                  members=[c.id for c in chunks], source_hash=_hash(f.sha256, text),
                  start_line=1, end_line=max(1, f.lines))


def module_entity(module: str, files: list[FileRecord], file_chunks: dict[str, list[Chunk]],
                  submodules: list[str]) -> Entity:
    label = module or "."
    scopes = sorted({f.scope for f in files})
    # A folder holding only subfolders has no files or scopes of its own to list.
    lines = [f"Module (folder) {label}: {len(files)} indexed files"
             + (f", scope {', '.join(scopes)}." if scopes else ".")]
    if files:
        lines.append("Files: " + _names([PurePosixPath(f.path).name for f in files]) + ".")
    types = [c for f in files for c in file_chunks.get(f.path, []) if c.kind in TYPE_KINDS]
    if types:
        lines.append("Main types: " + _names([c.name for c in types]) + ".")
    funcs = [c for f in files for c in file_chunks.get(f.path, [])
             if c.kind in CALLABLE and not c.class_name]
    if funcs:
        lines.append("Free functions: " + _names([c.name for c in funcs]) + ".")
    if submodules:
        lines.append("Subfolders: " + _names(submodules) + ".")
    text = "\n".join(lines)
    return Entity(id=module_node(module), level="module", path=module or ".", title=f"{label}/",
                  text=text, members=[file_node(f.path) for f in files],
                  source_hash=_hash(*(f.sha256 for f in files), text))


def call_chain_entities(chunks: list[Chunk], structure: ProjectStructure,
                        min_callees: int = 2) -> list[Entity]:
    """One entity per callable with several resolved callees: the root and its neighbourhood."""
    by_node = {sym_node(c.id): c for c in chunks}
    callees: dict[str, list[str]] = defaultdict(list)
    callers: dict[str, list[str]] = defaultdict(list)
    for e in structure.edges:
        # A macro use is a call edge too (graph.CALL_TARGETS), but a chain is of functions:
        # MIN/MAX and loop macros would root a chain at most functions.
        target = by_node.get(e.target)
        if e.type == "call" and (target is None or target.kind != "macro"):
            callees[e.source].append(e.target)
            callers[e.target].append(e.source)
    out = []
    for node, targets in callees.items():
        root = by_node.get(node)
        if root is None or len(targets) < min_callees:
            continue
        def label(n: str) -> str:
            c = by_node.get(n)
            return f"{c.qualified_name or c.name} ({c.path})" if c else n
        up = callers.get(node, [])
        text = (f"Call chain rooted at {root.qualified_name or root.name} in {root.path}:\n"
                f"calls {_names([label(t) for t in targets])}.")
        if up:
            text += f"\nCalled by {_names([label(u) for u in up])}."
        out.append(Entity(id=chain_id(root.id), level="call_chain", path=root.path,
                          title=f"{root.qualified_name or root.name} call chain", text=text,
                          members=[root.id] + [node_chunk(t) for t in targets],
                          source_hash=_hash(root.file_sha, text),
                          start_line=root.start_line, end_line=root.end_line))
    return out


def build_entities(files: list[FileRecord], chunks: list[Chunk], structure: ProjectStructure,
                   leading_comments: dict[str, str], includes: dict[str, list[str]]
                   ) -> list[Entity]:
    by_file: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        if c.kind != "function_part":
            by_file[c.path].append(c)
    inc_out: dict[str, list[str]] = defaultdict(list)
    inc_in: dict[str, list[str]] = defaultdict(list)
    for e in structure.edges:
        if e.type == "include":
            src, dst = node_path(e.source), node_path(e.target)
            inc_out[src].append(dst)
            inc_in[dst].append(src)
    entities: list[Entity] = []
    for f in files:
        resolved = inc_out.get(f.path, [])
        shown = resolved + [i for i in includes.get(f.path, [])
                            if not any(r.endswith(i) for r in resolved)]
        entities.append(file_entity(f, by_file.get(f.path, []), leading_comments.get(f.path, ""),
                                    shown, inc_in.get(f.path, [])))
    by_module: dict[str, list[FileRecord]] = defaultdict(list)
    for f in files:
        by_module[module_of(f.path)].append(f)
    children: dict[str, list[str]] = defaultdict(list)
    for m in list(by_module):
        while m:
            parent = module_of(m)
            if m not in children[parent]:
                children[parent].append(m)
            m = parent
    for module in sorted(set(by_module) | set(children)):
        entities.append(module_entity(module, by_module.get(module, []), by_file,
                                      sorted(children.get(module, []))))
    entities.extend(call_chain_entities(chunks, structure))
    return entities
