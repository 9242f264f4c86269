"""Fortran parser: tree-sitter-fortran program units turned into code chunks (models.Chunk).

Scientific codes often keep their numerical kernels in Fortran beside a C or C++ driver. Each
subroutine, function and main program becomes a `function` chunk named as written, with its
calls; a module's specification part (its variables, types and interfaces before `contains`)
becomes a `namespace_block`, each derived type there a `struct`, and the module names its
procedures' namespace. Oversized units are cut at statement boundaries into `function_part`
chunks, as C++ functions are.

The grammar reads free form only. Fixed-form source (`.f`, `.for`, ...: comments marked in
column 1, continuation in column 6) is rewritten line for line before parsing, so line numbers
stay exact; a file whose layout is free form despite its extension is parsed as it is. Like the
C++ parser, nothing here raises: a failure is counted in ParsedFile.failures.
"""
from __future__ import annotations

import re

from ...contracts.models import Chunk, ParsedFile, is_fixed_form
from ...contracts.settings import ChunkSettings
from . import ChunkWriter, parse_guarded
from .cpp import line_ranges

_UNITS = {"subroutine": "subroutine_statement", "function": "function_statement",
          "program": "program_statement", "module_procedure": "module_procedure_statement"}
_CONTAINERS = {"translation_unit", "internal_procedures", "ERROR", "preproc_if",
               "preproc_ifdef", "preproc_else", "preproc_elif"}
_MODULES = {"module": "module_statement", "submodule": "submodule_statement"}
# Blocks whose statements are cut points when one statement alone is longer than a chunk.
_BLOCKS = {"do_loop", "if_statement", "elseif_clause", "else_clause", "select_case_statement",
           "case_statement", "where_statement", "block_construct", "associate_statement"}
_BANNER = re.compile(r"copyright|licen[cs]e|spdx-|all rights reserved|warranty", re.I)
_INCLUDE = re.compile(r"""^[ \t]*#?[ \t]*include[ \t]*["'<]([^"'>]+)["'>]""", re.I | re.M)
_COMMENT_MARK = re.compile(r"^[ \t]*(?:[!*]+|[cC](?=\s|$|[-=*#!])[-=*#!]*)[ \t]?")

_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_fortran
        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_fortran.language()))
    return _PARSER


def free_form(text: str) -> str:
    """Fixed-form source as free form, one output line per input line: column-1 comment
    markers become `!`, and a continuation mark in column 6 becomes a trailing `&` on the last
    statement line before it."""
    out: list[str] = []
    last = None
    for line in text.split("\n"):
        if not line.strip():
            out.append(line)
            continue
        if line[0] in "cC*!":
            out.append("!" + line[1:])
            continue
        if line.startswith("#") or line.lstrip().startswith("!"):
            out.append(line)
            continue
        if not line.startswith("\t") and len(line) > 5 and line[5] not in " 0" \
                and (line[:5].strip() == "" or line[:5].strip().isdigit()):
            if last is not None:
                out[last] += " &"
            line = line[:5] + " " + line[6:]
        out.append(line)
        last = len(out) - 1
    return "\n".join(out)


def _is_rule(line: str) -> bool:
    """A comment line of only markers and punctuation (`c-----`, `!****`, `c`)."""
    return not any(ch.isalnum() for ch in _COMMENT_MARK.sub("", line, count=1))


def _clean_comment(lines: list[str]) -> str:
    """Comment text without its markers; rule lines, which only frame it, are dropped."""
    return "\n".join(_COMMENT_MARK.sub("", ln, count=1).rstrip() for ln in lines
                     if not _is_rule(ln)).strip()


class _FortranFile(ChunkWriter):
    def __init__(self, path, text, language, scope, file_sha, settings):
        super().__init__(path, text, language, scope, file_sha, settings)
        # What the grammar reads: free form, line for line the same as `lines`.
        self.source = free_form(text) if is_fixed_form(path, text) else text
        self.source_lines = self.source.split("\n")

    def run(self) -> ParsedFile:
        tree = _parser().parse(self.source.encode("utf-8", "replace"))
        self.visit(tree.root_node, "")
        errors = sum(1 for _ in _errors(tree.root_node)) if tree.root_node.has_error else 0
        return ParsedFile(path=self.path, chunks=self.chunks,
                          includes=[m.group(1) for m in _INCLUDE.finditer(self.source)],
                          leading_comment=self.leading_comment(), parse_errors=errors,
                          failures=self.failures, failure=self.failure)

    def visit(self, node, namespace: str, outer: frozenset[str] = frozenset()) -> None:
        """Units below `node`; `outer` holds the names declared by the enclosing module or
        unit, visible inside (host association)."""
        for child in node.named_children:
            try:
                if child.type in _UNITS:
                    self.unit(child, namespace, outer)
                elif child.type in _MODULES:
                    self.module(child)
                elif child.type in _CONTAINERS:
                    self.visit(child, namespace, outer)
            except Exception as exc:  # noqa: BLE001 - a construct's failure loses only it
                self.fail(exc)

    @staticmethod
    def name_of(node, statement: str) -> str:
        head = next((c for c in node.named_children if c.type == statement), None)
        name = head.child_by_field_name("name") if head is not None else None
        if name is None and head is not None:
            name = next((c for c in head.named_children if c.type == "name"), None)
        return name.text.decode("utf-8", "replace") if name is not None else ""

    def module(self, node) -> None:
        name = self.name_of(node, _MODULES[node.type])
        body, procs = _own_and_contained(node)
        end = procs.start_point.row if procs is not None else _last_line(node)
        shared = self.declared(node)
        start, comment = self.comment_before(node)
        self.add("namespace_block", start, end, name=name,
                 qualified_name=name, signature=self.first_line(node),
                 comment=comment, calls=self.calls(body, shared))
        for t in _types(body):
            self.derived_type(t, name)
        if procs is not None:
            self.visit(procs, name, shared)

    def unit(self, node, namespace: str, outer: frozenset[str]) -> None:
        name = self.name_of(node, _UNITS[node.type]) or "main"
        (start, comment), end = self.comment_before(node), _last_line(node)
        comment = comment or self.comment_inside(node)
        declared = outer | self.declared(node)
        own, inner = _own_and_contained(node)
        whole = self.add("function", start, end, name=name,
                         qualified_name=_qualified(namespace, name),
                         namespace=namespace, signature=self.first_line(node),
                         comment=comment, calls=self.calls(own, declared))
        if whole is not None and end - start + 1 > self.settings.max_chunk_lines:
            self.split(whole, node, declared)
        if inner is not None:
            self.visit(inner, namespace, declared)

    def derived_type(self, node, namespace: str) -> None:
        """A derived type of a module's specification part (`type :: Mesh ... end type`)
        is a `struct` of its own, as a C struct is: "the X type" finds it by name."""
        head = next((c for c in node.named_children if c.type == "derived_type_statement"), None)
        name = next((c.text.decode("utf-8", "replace") for c in head.named_children
                     if c.type == "type_name"), "") if head is not None else ""
        if not name:
            return
        start, comment = self.comment_before(node)
        members = [v for d in node.named_children if d.type == "variable_declaration"
                   for v in _declared_names(d)][:80]  # (as many as a C++ class lists)
        self.add("struct", start, _last_line(node), name=name,
                 qualified_name=_qualified(namespace, name),
                 namespace=namespace, signature=self.first_line(node),
                 comment=comment or self.comment_inside(node), members=members)

    def first_line(self, node) -> str:
        """The unit's statement, continuation lines joined (`subroutine f(a, &` / `b)`)."""
        row, parts = node.start_point.row, []
        while row < len(self.source_lines) and len(parts) < 8:
            line = self.source_lines[row].split("!", 1)[0].rstrip()
            parts.append(line.rstrip("&").strip())
            if not line.endswith("&"):
                break
            row += 1
        return " ".join(p for p in parts if p)[:400]

    def comment_rows(self, node) -> list[int]:
        """Rows of the comment run right above the unit (0-based), nearest last."""
        rows, prev = [], node.prev_named_sibling
        limit = node.start_point.row
        while prev is not None and prev.type == "comment" and prev.end_point.row >= limit - 1:
            rows.insert(0, prev.start_point.row)
            limit = prev.start_point.row
            prev = prev.prev_named_sibling
        return rows

    def own_comment_rows(self, node) -> list[int]:
        """The comment run above the unit without a licence banner in front of it: the banner
        ends at the first rule line (a comment with no letters or digits) after its last
        licence word; with no such line the whole run is taken for the banner."""
        rows = self.comment_rows(node)
        banner = [i for i, r in enumerate(rows) if _BANNER.search(self.lines[r])]
        if not banner:
            return rows
        after = rows[banner[-1] + 1:]
        rules = [i for i, r in enumerate(after) if _is_rule(self.lines[r])]
        return after[rules[0] + 1:] if rules else []

    def comment_before(self, node) -> tuple[int, str]:
        """The unit's first line (its own comment included) and that comment's text."""
        rows = self.own_comment_rows(node)
        return ((rows[0] if rows else node.start_point.row) + 1,
                _clean_comment([self.lines[r] for r in rows]))

    def comment_inside(self, node) -> str:
        """The comment run after the unit's statement, where Fortran often documents it."""
        out = []
        for child in node.named_children[1:]:
            if child.type != "comment":
                break
            out.append(self.lines[child.start_point.row])
        return _clean_comment(out)

    def calls(self, nodes, declared: frozenset[str] = frozenset()) -> list[str]:
        """Called names: every `call f(...)`, and each `f(...)` in an expression unless `f` is
        declared here (array element and function reference share one syntax in Fortran)."""
        out: dict[str, None] = {}
        stack = list(reversed(nodes))  # popped from the end: source order
        while stack and len(out) < 200:
            n = stack.pop()
            if n.type == "subroutine_call":
                target = n.child_by_field_name("subroutine")
                if target is not None:
                    out[target.text.decode("utf-8", "replace")] = None
            elif n.type == "call_expression" and n.named_child_count:
                head = n.named_children[0]
                name = head.text.decode("utf-8", "replace")
                if head.type == "identifier" and name.lower() not in declared:
                    out[name] = None
            stack.extend(reversed(n.named_children))
        return list(out)

    @staticmethod
    def declared(node) -> frozenset[str]:
        """Lower-case names of the unit's dummy arguments and of the variables it declares,
        not descending into contained procedures."""
        names: set[str] = set()
        stack = list(node.named_children)
        while stack:
            n = stack.pop()
            if n.type in ("internal_procedures",) or n.type in _UNITS:
                continue
            if n.type == "parameters":
                names.update(c.text.decode("utf-8", "replace").lower()
                             for c in n.named_children if c.type == "identifier")
            elif n.type == "variable_declaration":
                names.update(v.lower() for v in _declared_names(n))
                continue
            stack.extend(n.named_children)
        return frozenset(names)

    def split(self, whole: Chunk, node, declared: frozenset[str]) -> None:
        """Cut an oversized unit at statement boundaries into linked function_part chunks."""
        limit, cuts = self.settings.max_chunk_lines, set()

        def collect(block, depth):
            for st in block.named_children:
                cuts.add(st.start_point.row + 1)
                if depth < 3 and st.type in _BLOCKS and \
                        st.end_point.row - st.start_point.row + 1 > limit:
                    collect(st, depth + 1)

        collect(node, 0)
        ranges = line_ranges(whole.start_line, whole.end_line, cuts, limit)
        if len(ranges) < 2:
            return
        n = len(ranges)
        for i, (a, b) in enumerate(ranges, 1):
            self.add("function_part", a, b, name=f"{whole.name} (part {i}/{n})",
                     qualified_name=whole.qualified_name, namespace=whole.namespace,
                     signature=whole.signature, parent_id=whole.id, part=i, parts=n,
                     calls=self.calls(_within(node, a - 1, b - 1), declared))

    def leading_comment(self) -> str:
        """The file's first comment run that is not a licence banner."""
        runs, run = [], []
        for line in self.lines[:200]:
            if _COMMENT_MARK.match(line) and (line[:1] in "cC*!" or line.lstrip().startswith("!")):
                run.append(line)
            elif line.strip():
                break
            elif run:
                runs.append(run)
                run = []
        if run:
            runs.append(run)
        for r in runs:
            if not any(_BANNER.search(ln) for ln in r):
                return _clean_comment(r)[:2000]
        return ""


def _qualified(namespace: str, name: str) -> str:
    """A unit's or type's name inside its module (`mod::name`), as C++ names are written."""
    return f"{namespace}::{name}" if namespace else name


def _own_and_contained(node) -> tuple[list, object]:
    """A module's or unit's own statements, and its `contains` part (None without one): the
    procedures there are units of their own, so their calls are not the container's."""
    own = [c for c in node.named_children if c.type != "internal_procedures"]
    return own, next((c for c in node.named_children if c.type == "internal_procedures"), None)


def _declared_names(declaration) -> list[str]:
    """The names a variable declaration declares, as written: a declarator is a name, or holds
    it first (`a(n)`, `n = 3`, `p(:) => null()`)."""
    out = []
    for d in declaration.children_by_field_name("declarator"):
        while d is not None and d.type != "identifier":
            d = d.child_by_field_name("left") or next(
                (c for c in d.named_children if c.type in ("identifier", "sized_declarator")),
                None)
        if d is not None:
            out.append(d.text.decode("utf-8", "replace"))
    return out


def _types(nodes) -> list:
    """Derived-type definitions among a specification part's statements, also inside the
    preprocessor blocks that hold them."""
    out = []
    for n in nodes:
        if n.type == "derived_type_definition":
            out.append(n)
        elif n.type in _CONTAINERS:
            out += _types(n.named_children)
    return out


def _last_line(node) -> int:
    """The 1-based last line of a node; a statement's node ends after its newline."""
    row, col = node.end_point
    return row + 1 if col > 0 or row == node.start_point.row else row


def _errors(node):
    if node.type == "ERROR" or node.is_missing:
        yield node
        return
    for c in node.children:
        yield from _errors(c)


def _within(node, first_row: int, last_row: int) -> list:
    """The descendants of `node` that lie inside rows [first_row, last_row], outermost only."""
    out, stack = [], list(node.named_children)
    while stack:
        n = stack.pop()
        if n.end_point.row < first_row or n.start_point.row > last_row:
            continue
        if n.start_point.row >= first_row and n.end_point.row <= last_row:
            out.append(n)
        else:
            stack.extend(n.named_children)
    return out


def parse_fortran(path: str, text: str, *, language: str = "fortran", scope: str = "other",
                  file_sha: str = "", settings: ChunkSettings | None = None) -> ParsedFile:
    """Chunks and file facts of one Fortran file. Never raises: returns what it could, with
    the failure counted in ParsedFile.failures."""
    return parse_guarded(path, lambda: _FortranFile(path, text, language, scope, file_sha, settings))
