"""C/C++/CUDA parser: a tree-sitter syntax tree turned into code chunks (models.Chunk).

One pass over the declaration-level nodes (namespaces, classes, templates, preprocessor blocks,
ERROR nodes); function bodies are never walked for definitions, so lambdas and local code stay
inside their function. Calls come from one query over the whole file. Nothing here raises: each
construct is handled under its own try, and a failure only loses that construct; failures are
counted in ParsedFile.failures (with the first one in .failure) and shown in the build report.
"""
from __future__ import annotations

import bisect
import posixpath
import re
import textwrap
from typing import NamedTuple

from ...contracts.models import Chunk, ParsedFile
from ...contracts.settings import ChunkSettings
from . import ChunkWriter, parse_guarded

HEADER_EXTENSIONS = {".h", ".hh", ".hpp", ".hxx", ".h++", ".cuh", ".inl", ".tpp", ".ipp", ".tcc"}
_CLASS_KINDS = {"class_specifier": "class", "struct_specifier": "struct",
                "union_specifier": "union", "enum_specifier": "enum"}
_CONTAINERS = {"translation_unit", "declaration_list", "preproc_if", "preproc_ifdef",
               "preproc_else", "preproc_elif", "preproc_elifdef", "ERROR"}
_MACRO_DEFS = {"preproc_def", "preproc_function_def"}
_WRAPPERS = {"pointer_declarator", "reference_declarator", "attributed_declarator",
             "init_declarator"}
_PARAM_KINDS = {"parameter_declaration", "optional_parameter_declaration",
                "variadic_parameter_declaration", "variadic_parameter", "comment"}
_BANNER = re.compile(rb"copyright|licen[cs]e|spdx-|all rights reserved|"
                     rb"permission is hereby granted|warranty", re.I)
# Function-specifier / export macros (MYLIB_INLINE_FUNCTION, MYLIB_EXPORT, __global__ ...)
# confuse the grammar; they are blanked with spaces before parsing (offsets stay exact).
_FN_MACRO = re.compile(
    rb"\b(_*[A-Z][A-Z0-9_]*_[A-Z0-9]+|__[a-z_]+__)\b"
    rb"(?=[ \t]+[A-Za-z_~]|[ \t]*\r?\n[ \t]*[A-Za-z_~])")
_FN_MACRO_PREFIX = re.compile(rb"(?:^|\b(?:static|inline|constexpr|friend|virtual|explicit|"
                              rb"extern)|[^-]>)[ \t]*$")
_CLASS_MACRO = re.compile(
    rb"\b(?:class|struct|union)[ \t]+([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)[ \t]+"
    rb"(?!final\b)(?=[A-Za-z_]\w*[ \t]*(?:<[^;{}]*>)?[ \t\r\n]*(?:final\b|:(?!:)|\{))")
_OPERATOR_TOKEN = re.compile(rb"operator\s*[^\s\w(]{1,3}")
_INCLUDE_LINE = re.compile(rb"^[ \t]*(#)[ \t]*include\b", re.M)
_LAUNCH = re.compile(rb"([A-Za-z_][\w:]*)[ \t]*(?:<[^<>;{}]*>)?[ \t]*<<<")
_MACRO_NAME = re.compile(r"_*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_ALL_CAPS = re.compile(r"[A-Z][A-Z0-9_]*")
_PAREN_MACRO = re.compile(rb"__launch_bounds__[ \t]*\([^()\n]*\)")
_SEPARATE_MACRO = re.compile(r"(\[\[.*\]\]|[A-Z_][A-Z0-9_]*(\s*\(.*\))?|__\w+__(\s*\(.*\))?)")

_PARSER = None
_CALL_QUERY = None


def _parser():
    """The tree-sitter parser and call query, created once per process."""
    global _PARSER, _CALL_QUERY
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_cpp

        lang = tree_sitter.Language(tree_sitter_cpp.language())
        _CALL_QUERY = tree_sitter.QueryCursor(
            tree_sitter.Query(lang, "(call_expression function: (_) @fn) (comment) @c (ERROR) @e"))
        _PARSER = tree_sitter.Parser(lang)
    return _PARSER, _CALL_QUERY


def _norm(s: str) -> str:
    return " ".join(s.split())


def _strip_templates(s: str) -> str:
    """Remove balanced <...> groups (template arguments) from a name."""
    if "<" not in s or s.startswith("operator"):
        return s
    out, depth = [], 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out).strip()


def _blank(m: re.Match) -> bytes:
    s, e = m.span(1)
    return m.group(0)[: s - m.start()] + b" " * (e - s) + m.group(0)[e - m.start():]


def _blank_fn_macro(m: re.Match) -> bytes:
    # Only at the start of a declaration (line start, after a specifier or `template <...>`)
    # and when a parameter list follows before the statement ends: `MACRO void f(` yes,
    # `REAL_T x = 1;` no.
    line_start = m.string.rfind(b"\n", 0, m.start()) + 1
    if not _FN_MACRO_PREFIX.search(m.string[max(line_start, m.start() - 200): m.start()]):
        return m.group(0)
    tail = _OPERATOR_TOKEN.sub(b"operator", m.string[m.end(): m.end() + 400])
    stop = min([i for i in (tail.find(b";"), tail.find(b"{"), tail.find(b"=")) if i >= 0],
               default=len(tail))
    return _blank(m) if b"(" in tail[:stop] else m.group(0)


def clean_comment(raw: str) -> str:
    """Comment text without //, ///, //!, /* */ markers, leading '*' and decoration lines."""
    lines = []
    for line in raw.split("\n"):
        s = line.strip()
        if s.startswith("//"):
            s = s.lstrip("/")
            s = s[1:] if s.startswith(("!", "<")) else s
        else:
            if s.startswith("/*"):
                s = s[2:].lstrip("*!")
            if s.endswith("*/"):
                s = s[:-2].rstrip("*")
            if s.startswith("*"):
                s = s.lstrip("*")
        s = s[1:] if s.startswith(" ") else s
        if s and not s.strip("*=-/#~_ \t"):
            s = ""
        lines.append(s.rstrip())
    if raw.lstrip().startswith("/*") and len(lines) > 1 and lines[0]:
        # text on the opening line: the following lines are dedented on their own
        return (lines[0] + "\n" + textwrap.dedent("\n".join(lines[1:]))).strip("\n")
    return textwrap.dedent("\n".join(lines)).strip("\n")


class _Ctx(NamedTuple):
    namespaces: tuple = ()
    classes: tuple = ()
    template: str = ""
    outer: object = None  # outermost node of the construct (a template_declaration)
    friend: bool = False


class _FileParser(ChunkWriter):
    def __init__(self, path, text, language, scope, file_sha, settings):
        super().__init__(path, text, language, scope, file_sha, settings)
        self.is_header = posixpath.splitext(path)[1].lower() in HEADER_EXTENSIONS
        self.src = text.encode("utf-8", "surrogateescape")
        clean = _CLASS_MACRO.sub(_blank, self.src)
        clean = _FN_MACRO.sub(_blank_fn_macro, clean)
        self.clean = _PAREN_MACRO.sub(lambda m: b" " * len(m.group(0)), clean)
        # rows that held only a blanked macro: they belong to the construct below them
        self.macro_rows = set()
        if self.clean != self.src:
            for row, (a, b) in enumerate(zip(self.src.split(b"\n"), self.clean.split(b"\n"))):
                if a != b and not b.strip():
                    self.macro_rows.add(row)
        self.namespaces_seen: set[str] = set()
        self.classes_seen: set[str] = set()

    # ---- text helpers ------------------------------------------------------------------
    def txt(self, node, clean=False) -> str:
        b = self.clean if clean else self.src
        return b[node.start_byte: node.end_byte].decode("utf-8", "replace")

    def span(self, start: int, end: int, clean=True) -> str:
        b = self.clean if clean else self.src
        return b[start:end].decode("utf-8", "replace")

    @staticmethod
    def end_line(node) -> int:
        return node.end_point.row + (1 if node.end_point.column > 0 else 0)

    def starts_line(self, node) -> bool:
        line_start = self.src.rfind(b"\n", 0, node.start_byte) + 1
        return not self.src[line_start: node.start_byte].strip()

    # ---- main ----------------------------------------------------------------------------
    def run(self) -> ParsedFile:
        parser, query = _parser()
        tree = parser.parse(self.clean)
        caps = query.captures(tree.root_node)
        calls = [(n.start_byte, n.end_byte, self.call_name(n)) for n in caps.get("fn", [])]
        if b"<<<" in self.src:  # CUDA kernel launches are not call_expressions
            calls += [(m.start(), m.end(), m.group(1).decode("utf-8", "replace"))
                      for m in _LAUNCH.finditer(self.clean)]
        calls = sorted(c for c in calls if c[2])
        self.call_starts = [c[0] for c in calls]
        self.call_names = [c[2] for c in calls]
        errors = len(caps.get("e", [])) if tree.root_node.has_error else 0
        self.visit_children(tree.root_node, _Ctx())
        includes = self.includes(tree.root_node)
        leading = self.leading_comment(tree.root_node, sorted(caps.get("c", []),
                                                              key=lambda n: n.start_byte))
        return ParsedFile(path=self.path, chunks=self.chunks, includes=includes,
                          leading_comment=leading, parse_errors=errors,
                          failures=self.failures, failure=self.failure)

    def visit_children(self, node, ctx: _Ctx) -> None:
        children = node.named_children
        i = 0
        while i < len(children):
            child = children[i]
            kind = self.block_kind(child)
            if kind == "typedef" and ctx.classes:
                kind = ""  # a class's member aliases are part of the class (its members)
            if kind:
                j = self.block_end(children, i, kind)
                try:
                    self.definitions(kind, children[i:j], node)
                except Exception as exc:  # noqa: BLE001 - as below
                    self.fail(exc, child)
                i = j
                continue
            try:
                self.visit(child, ctx)
            except Exception as exc:  # noqa: BLE001 - one bad construct must not lose the file
                self.fail(exc, child)
            i += 1

    @staticmethod
    def block_kind(node) -> str:
        """'macro' for #defines, 'typedef' for type aliases (not `typedef struct {...}`, which
        is a struct), else ''."""
        if node.type in _MACRO_DEFS:
            return "macro"
        if node.type == "alias_declaration":
            return "typedef"
        if node.type == "type_definition":
            spec = node.child_by_field_name("type")
            if spec is None or spec.type not in _CLASS_KINDS \
                    or spec.child_by_field_name("body") is None:
                return "typedef"
        return ""

    def block_end(self, children, i: int, kind: str) -> int:
        """End of a block of definitions of one kind on consecutive lines (comments between
        them included): a blank line or any other construct closes it, as a reader groups them."""
        j, last = i + 1, i
        while j < len(children) and (children[j].type == "comment"
                                     or self.block_kind(children[j]) == kind) \
                and children[j].start_point.row <= self.end_line(children[j - 1]):
            if children[j].type != "comment":
                last = j
            j += 1
        return last + 1

    def definitions(self, kind: str, run, parent) -> None:
        """One chunk per block of #defines or type aliases: scientific C and C++ keep constants,
        field indices, small kernels (a stencil, a min/max) in macros and name their array and
        precision types with aliases, and a reader asks for them by what they are. An include
        guard (#ifndef X / #define X) is not a definition."""
        guard = parent.child_by_field_name("name") if parent.type == "preproc_ifdef" else None
        defs = []
        for d in run:
            name = self.definition_name(d)
            if not name or (guard is not None and d.type == "preproc_def"
                            and d.child_by_field_name("value") is None
                            and name == self.txt(guard)):
                continue
            defs.append((d, name))
        if not defs:
            return
        first, name = defs[0]
        if len(defs) > 1:
            sig = ", ".join(n for _, n in defs[:12]) + (", ..." if len(defs) > 12 else "")
        elif first.type == "preproc_function_def":
            params = first.child_by_field_name("parameters")
            sig = name + (_norm(self.txt(params)) if params is not None else "")
        else:
            sig = _norm(self.txt(first)).removeprefix("#define ")
        self.emit(kind, first, defs[-1][0], name=name, qualified_name=name,
                  signature=(("#define " if kind == "macro" else "") + sig)[:400],
                  members=[n for _, n in defs][1:])

    def definition_name(self, node) -> str:
        if node.type in _MACRO_DEFS or node.type == "alias_declaration":
            name = node.child_by_field_name("name")
            return self.txt(name) if name is not None else ""
        decl = node.child_by_field_name("declarator")  # typedef ... NAME; (or *NAME, NAME[3])
        while decl is not None and decl.type not in ("type_identifier", "identifier"):
            decl = decl.child_by_field_name("declarator")
        return self.txt(decl) if decl is not None else ""

    def visit(self, node, ctx: _Ctx) -> None:
        t = node.type
        if t in _CONTAINERS:
            self.visit_children(node, ctx._replace(outer=None, template=""))
            if t == "ERROR":
                self.salvage(node, ctx._replace(outer=None, template=""))
        elif t == "namespace_definition":
            name = node.child_by_field_name("name")
            parts = [p for p in re.split(r"::", self.txt(name)) if p.strip()] if name else []
            parts = [re.sub(r"^\s*inline\s+", "", p).strip() for p in parts] or ["(anonymous)"]
            self.namespaces_seen.update(parts)
            body = node.child_by_field_name("body")
            if body is not None:
                self.visit_children(body, _Ctx(ctx.namespaces + tuple(parts), ctx.classes))
        elif t == "linkage_specification":
            body = node.child_by_field_name("body")
            if body is not None:
                (self.visit_children if body.type == "declaration_list" else self.visit)(body, ctx)
        elif t == "template_declaration":
            params = node.child_by_field_name("parameters")
            tpl = _norm(self.txt(params)) if params is not None else "<>"
            inner = ctx._replace(template=(ctx.template + " " + tpl).strip(),
                                 outer=ctx.outer or node)
            for child in node.named_children:
                if child.type not in ("template_parameter_list", "comment"):
                    self.visit(child, inner)
        elif t in _CLASS_KINDS:
            self.class_like(node, ctx, node)
        elif t == "function_definition":
            self.function(node, ctx)
        elif t in ("declaration", "field_declaration", "type_definition"):
            spec = node.child_by_field_name("type")
            if spec is not None and spec.type in _CLASS_KINDS:
                if spec.child_by_field_name("body") is not None:
                    alias = node.child_by_field_name("declarator") if t == "type_definition" \
                        else None
                    self.class_like(spec, ctx, node, alias=self.txt(alias) if alias else "")
                return
            if t != "type_definition":
                self.function(node, ctx)
        elif t == "friend_declaration":
            for child in node.named_children:
                if child.type in ("function_definition", "declaration"):
                    self.function(child, ctx._replace(friend=True))

    # ---- names ---------------------------------------------------------------------------
    def flatten(self, node) -> list[str]:
        """Scope parts of a (qualified) name, template arguments stripped."""
        t = node.type
        if t == "qualified_identifier":
            scope, name = node.child_by_field_name("scope"), node.child_by_field_name("name")
            if "::" not in self.txt(node):  # recovery artefact: `Type<T> name` glued together
                return self.flatten(name) if name else []
            return (self.flatten(scope) if scope else []) + (self.flatten(name) if name else [])
        if t in ("template_type", "template_function", "template_method"):
            name = node.child_by_field_name("name")
            return self.flatten(name) if name else [_strip_templates(self.txt(node))]
        if t == "destructor_name":
            return ["~" + self.txt(node).lstrip("~").strip()]
        if t == "operator_name":
            op = self.txt(node)[len("operator"):].strip()
            spaced = op[:1].isalpha()  # operator new / delete / co_await
            return ["operator " + _norm(op) if spaced else "operator" + op.replace(" ", "")]
        if t == "operator_cast":
            return ["operator " + _norm(self.txt(node, True).split("(", 1)[0][len("operator"):])]
        return [_strip_templates(_norm(self.txt(node)))]

    @staticmethod
    def func_declarator(node):
        """The function_declarator (or conversion operator) inside a declarator, else None."""
        for _ in range(8):
            if node is None:
                return None
            t = node.type
            if t == "function_declarator":
                inner = node.child_by_field_name("declarator")
                return None if inner is None or inner.type == "parenthesized_declarator" else node
            if t == "operator_cast":
                return node
            if t == "qualified_identifier":
                name = node.child_by_field_name("name")
                return node if name is not None and name.type == "operator_cast" else None
            if t not in _WRAPPERS:
                return None
            inner = node.child_by_field_name("declarator")
            node = inner if inner is not None else (node.named_children[-1]
                                                    if node.named_children else None)
        return None

    # ---- constructs ----------------------------------------------------------------------
    def function(self, node, ctx: _Ctx) -> None:
        fd = None
        for decl in node.children_by_field_name("declarator"):
            fd = self.func_declarator(decl)
            if fd is not None:
                top = decl
                break
        if fd is None:
            return
        body = node.child_by_field_name("body") if node.type == "function_definition" else None
        self.make_function(ctx, fd, body, node, node, node.start_byte, top.end_byte)

    def make_function(self, ctx: _Ctx, fd, body, node, end_node, sig_start, sig_end) -> None:
        """One function chunk: `node` starts it (unless a template wraps it), `end_node` ends it."""
        is_decl = body is None
        if is_decl and not (self.settings.header_declarations and self.is_header):
            return
        name_node = fd.child_by_field_name("declarator") if fd.type == "function_declarator" else fd
        params = fd.child_by_field_name("parameters")
        if is_decl and params is not None and any(
                p.type not in _PARAM_KINDS for p in params.named_children):
            return  # `Grid g(64, 64);` declares an object, not a function
        parts = self.flatten(name_node)
        if not parts or not parts[-1]:
            return
        name, scope = parts[-1], parts[:-1]
        before = self.clean[max(0, name_node.start_byte - 40): name_node.start_byte].rstrip()
        if before.endswith(b"~") and not name.startswith("~"):
            name = "~" + name  # `MACRO ~A()` parses the tilde as an ERROR node
        if fd.type == "function_declarator" and _ALL_CAPS.fullmatch(name):
            args = params.named_children if params is not None else []
            if args and all(a.type == "parameter_declaration"
                            and a.child_by_field_name("declarator") is None for a in args):
                name = f"{name}({', '.join(_norm(self.txt(a)) for a in args)})"  # TEST(S, N)
        namespaces, classes = list(ctx.namespaces), list(ctx.classes)
        if scope:
            if len(scope) == 1 and scope[0] in self.namespaces_seen \
                    and scope[0] not in self.classes_seen:
                namespaces += scope
            else:
                namespaces += scope[:-1]
                classes = classes + [scope[-1]] if not ctx.friend else classes
        owner = classes[-1] if classes else ""
        if is_decl:
            kind = "declaration"
        elif name.startswith("~"):
            kind = "destructor"
        elif name.startswith("operator"):
            kind = "operator"
        elif owner and name == owner and not ctx.friend:
            kind = "constructor"
        elif owner and not ctx.friend:
            kind = "method"
        else:
            kind = "function"
        qual_parts = namespaces + (classes if not ctx.friend else []) + [name]
        outer = ctx.outer or node
        if is_decl:
            sig = _norm(self.span(sig_start, node.end_byte)).rstrip(";").rstrip()
        else:
            sig = _norm(self.span(sig_start, sig_end))
        if ctx.friend:
            sig = "friend " + sig
        chunk = self.emit(
            kind, outer, end_node, name=name, qualified_name="::".join(qual_parts),
            namespace="::".join(namespaces), class_name=owner, signature=sig[:400],
            template=ctx.template, is_declaration=is_decl,
            calls=self.calls_in(body.start_byte, body.end_byte) if body is not None else [])
        if chunk is not None and body is not None \
                and chunk.end_line - chunk.start_line + 1 > self.settings.max_chunk_lines:
            self.split(chunk, body)

    def salvage(self, error, ctx: _Ctx) -> None:
        """Functions torn apart by error recovery: a body `{...}` directly inside an ERROR node
        right after a node that ends with a function declarator."""
        kids = error.named_children
        for prev, body in zip(kids, kids[1:]):
            if body.type != "compound_statement":
                continue
            fd, stack, seen = None, [prev], 0
            while stack and seen < 400:
                n = stack.pop()
                seen += 1
                if n.type == "function_declarator" and n.end_byte <= body.start_byte:
                    gap = self.clean[n.end_byte: body.start_byte]
                    if not re.sub(rb"\b(const|noexcept|override|final)\b", b"", gap).strip() \
                            and (fd is None or n.end_byte > fd.end_byte):
                        fd = n
                stack.extend(n.named_children)
            if fd is None:
                continue
            name = self.txt(fd.child_by_field_name("declarator") or fd)
            if _ALL_CAPS.fullmatch(name):
                continue  # a macro such as a lambda macro, not a function
            head = fd.parent if fd.parent is not None and fd.parent.type in (
                "parameter_declaration", "declaration", "field_declaration") else fd
            try:
                self.make_function(ctx, fd, body, head, body, head.start_byte, fd.end_byte)
            except Exception as exc:  # noqa: BLE001 - counted and reported, as above
                self.fail(exc, head)

    def class_like(self, spec, ctx: _Ctx, node, alias: str = "") -> None:
        body = spec.child_by_field_name("body")
        if body is None:
            return
        kind = _CLASS_KINDS[spec.type]
        name_node = spec.child_by_field_name("name")
        parts = self.flatten(name_node) if name_node is not None else []
        if not parts:
            if ctx.classes and not alias:
                return  # anonymous member union/struct: listed in the owner's members
            parts = [alias or "(anonymous)"]
        name, scope = parts[-1], parts[:-1]
        classes = list(ctx.classes) + scope
        self.classes_seen.add(name)
        bases = []
        for child in spec.named_children:
            if child.type == "base_class_clause":
                bases += ["::".join(self.flatten(b)) for b in child.named_children
                          if b.type in ("type_identifier", "template_type", "qualified_identifier")]
        members = self.members(body, kind)
        sig = _norm(self.span(spec.start_byte, body.start_byte))
        self.emit(kind, ctx.outer or node, node, name=name,
                  qualified_name="::".join(list(ctx.namespaces) + classes + [name]),
                  namespace="::".join(ctx.namespaces), class_name=classes[-1] if classes else "",
                  signature=sig[:400], template=ctx.template, bases=bases, members=members)
        if kind != "enum":
            self.visit_children(body, _Ctx(ctx.namespaces, tuple(classes) + (name,)))

    def members(self, body, kind: str) -> list[str]:
        out: list[str] = []
        stack = list(reversed(body.named_children))
        while stack and len(out) < 80:
            m = stack.pop()
            t = m.type
            if t in ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"):
                stack.extend(reversed(m.named_children))
                continue
            if t == "enumerator":
                n = m.child_by_field_name("name")
                out.append(self.txt(n) if n else _norm(self.txt(m)))
                continue
            if t in ("comment", "access_specifier", "static_assert_declaration", "ERROR") \
                    or t.startswith("preproc") or t in ("identifier", "type_identifier"):
                continue
            inner, prefix = m, ""
            while inner.type in ("template_declaration", "friend_declaration"):
                if inner.type == "template_declaration":
                    p = inner.child_by_field_name("parameters")
                    prefix += "template" + (_norm(self.txt(p, True)) if p else "") + " "
                else:
                    prefix += "friend "
                kids = [c for c in inner.named_children
                        if c.type not in ("template_parameter_list", "comment")]
                if not kids:
                    break
                inner = kids[-1]
            spec = inner.child_by_field_name("type")
            body2 = inner.child_by_field_name("body")
            if inner.type in _CLASS_KINDS or (spec is not None and spec.type in _CLASS_KINDS
                                              and spec.child_by_field_name("body") is not None):
                s = inner if inner.type in _CLASS_KINDS else spec
                n = s.child_by_field_name("name")
                text = f"{_CLASS_KINDS[s.type]} {self.txt(n) if n else '(anonymous)'}"
                decl = inner.child_by_field_name("declarator") if s is spec else None
                text += f" {_norm(self.txt(decl, True))}" if decl is not None else ""
            elif body2 is not None and body2.type == "compound_statement":
                text = self.span(inner.start_byte, body2.start_byte)
                head = re.split(r"\)\s*:(?!:)", text, maxsplit=1)
                text = head[0] + ")" if len(head) > 1 else text  # drop a ctor's initializers
            else:
                text = self.txt(inner, True).rstrip().rstrip(";")
            text = _norm(prefix + text)
            if text:
                out.append(text if len(text) <= 160 else text[:157] + "...")
        return out

    # ---- chunk assembly ------------------------------------------------------------------
    def emit(self, kind, outer, node, **fields) -> Chunk | None:
        start = outer.start_point.row + 1
        first = outer
        prev = first.prev_named_sibling
        while prev is not None and prev.type != "comment" and prev.start_point.row == \
                prev.end_point.row and prev.end_point.row >= start - 2:
            s = self.txt(prev).strip()
            if not _SEPARATE_MACRO.fullmatch(s) or s.endswith(";") or not self.starts_line(prev):
                break  # a separately parsed macro/attribute line in front belongs to the chunk
            first, start = prev, prev.start_point.row + 1
            prev = prev.prev_named_sibling
        while start - 2 in self.macro_rows:
            start -= 1
        comments: list = []
        prev = first.prev_named_sibling
        limit = start - 1
        while prev is not None and prev.type == "comment" and prev.end_point.row >= limit - 1 \
                and self.starts_line(prev):
            comments.append(prev)
            limit = prev.start_point.row
            prev = prev.prev_named_sibling
        comment = "\n".join(clean_comment(self.txt(c)) for c in reversed(comments)).strip()
        return self.add(kind, start, self.end_line(node), comment=comment, **fields)

    def call_name(self, fn) -> str:
        """`foo`, `obj.bar` -> bar, `ns::baz`, `Cls<T>::f` -> Cls::f; macros (ALL_CAPS_X) -> '';
        `F77_FUNC(name, NAME)(...)`, a macro that spells a Fortran routine's linker name -> name."""
        if fn.type == "call_expression":
            head, args = fn.child_by_field_name("function"), fn.child_by_field_name("arguments")
            first = args.named_children[0] if args is not None and args.named_children else None
            if head is None or head.type != "identifier" or first is None \
                    or first.type != "identifier" \
                    or not _ALL_CAPS.fullmatch(self.txt(head)):
                return ""
            fn = first
        if fn.type == "field_expression":
            fn = fn.child_by_field_name("field")
            if fn is None:
                return ""
        if fn.type not in ("identifier", "field_identifier", "qualified_identifier",
                           "template_function", "template_method", "destructor_name"):
            return ""
        name = "::".join(p for p in self.flatten(fn) if p)
        return "" if _MACRO_NAME.fullmatch(name) else name

    def calls_in(self, start: int, end: int) -> list[str]:
        out: dict[str, None] = {}
        i = bisect.bisect_left(self.call_starts, start)
        while i < len(self.call_starts) and self.call_starts[i] < end and len(out) < 200:
            out[self.call_names[i]] = None
            i += 1
        return list(out)

    def split(self, whole: Chunk, body) -> None:
        """Cut an oversized function at statement boundaries into linked function_part chunks."""
        limit = self.settings.max_chunk_lines
        cuts: set[int] = set()

        def collect(block, depth):
            prev_end, pending = -1, None
            for st in block.named_children:
                row = st.start_point.row + 1
                if pending is None:
                    pending = row  # a comment run starts the unit of the statement after it
                if st.type != "comment":
                    cut = pending if pending > prev_end else row if row > prev_end else None
                    if cut is not None:
                        cuts.add(cut)
                    pending = None
                    if depth < 3 and self.end_line(st) - row + 1 > limit:
                        for sub in _compound_children(st):
                            collect(sub, depth + 1)
                    prev_end = self.end_line(st)

        collect(body, 0)
        ranges = line_ranges(whole.start_line, whole.end_line, cuts, limit)
        if len(ranges) < 2:
            return
        n = len(ranges)
        starts = [self._byte_of_row(a) for a, _ in ranges] + [len(self.src) + 1]
        for i, (a, b) in enumerate(ranges, 1):
            self.add("function_part", a, b, name=f"{whole.name} (part {i}/{n})",
                     qualified_name=whole.qualified_name, namespace=whole.namespace,
                     class_name=whole.class_name, signature=whole.signature,
                     template=whole.template, parent_id=whole.id, part=i, parts=n,
                     calls=self.calls_in(starts[i - 1], starts[i]))

    def _byte_of_row(self, line: int) -> int:
        if not hasattr(self, "_row_bytes"):
            rows, pos = [0], -1
            while (pos := self.src.find(b"\n", pos + 1)) >= 0:
                rows.append(pos + 1)
            self._row_bytes = rows
        return self._row_bytes[min(line - 1, len(self._row_bytes) - 1)]

    # ---- file-level facts ----------------------------------------------------------------
    def includes(self, root) -> list[str]:
        """Every `#include` of the file in source order, at top level or nested: one inside a
        function or class body expands a list there (the X-macro idiom), and that file is as
        much this file's dependency. Lines that start a directive are found by pattern and
        confirmed in the tree, so a directive in a comment or string does not count."""
        out: dict[str, None] = {}
        for m in _INCLUDE_LINE.finditer(self.clean):
            node = root.descendant_for_byte_range(m.start(1), m.start(1) + 1)
            while node is not None and node.type != "preproc_include":
                node = node.parent
            p = node.child_by_field_name("path") if node is not None else None
            target = self.txt(p).strip().strip('"<>').strip() if p is not None else ""
            if target:
                out[target] = None
        return list(out)

    def leading_comment(self, root, comments) -> str:
        first = self.first_code_row(root)
        first = 1 << 30 if first is None else first
        blocks: list[list] = []
        for c in comments:
            if c.start_point.row > first:
                break
            if not self.starts_line(c):
                continue
            if blocks and c.start_point.row <= blocks[-1][-1].end_point.row + 1:
                blocks[-1].append(c)
            else:
                blocks.append([c])
        for i, block in enumerate(blocks[:2]):
            raw = b"\n".join(self.src[c.start_byte: c.end_byte] for c in block)
            if _BANNER.search(raw):
                if i == 0:
                    continue  # a licence banner: take the file description after it
                return ""
            return clean_comment(raw.decode("utf-8", "replace"))
        return ""

    def first_code_row(self, node) -> int | None:
        """Row of the first construct that is not a comment or preprocessor line."""
        for i, child in enumerate(node.named_children):
            t = child.type
            if node.field_name_for_named_child(i) in ("name", "condition"):
                continue  # `#ifndef GUARD`, `#if defined(X)`
            if t in ("preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif"):
                row = self.first_code_row(child)
                if row is not None:
                    return row
            elif t != "comment" and not t.startswith("preproc") and t != "identifier":
                return child.start_point.row
        return None


def line_ranges(first: int, last: int, cuts, limit: int) -> list[tuple[int, int]]:
    """Lines first..last cut into ranges of at most `limit` lines where possible, each
    starting at a cut point (a statement's first line); a range is longer only where no cut
    falls inside it, and a last range of one or two lines (a closing brace, an `end`) joins the
    one before."""
    points = sorted(c for c in cuts if first < c <= last)
    ranges, s = [], first
    while True:
        fits = [c for c in points if s < c and c - s <= limit]
        later = [c for c in points if c > s]
        if last - s + 1 <= limit or not later:
            ranges.append((s, last))
            break
        c = fits[-1] if fits else later[0]
        ranges.append((s, c - 1))
        s = c
    if len(ranges) >= 2 and ranges[-1][1] - ranges[-1][0] < 2:
        ranges[-2:] = [(ranges[-2][0], ranges[-1][1])]
    return ranges


def _compound_children(node):
    """Compound statements nested in a statement (loop bodies, lambda bodies in a call)."""
    out, stack = [], [node]
    while stack and len(out) < 16:
        n = stack.pop()
        for c in n.named_children:
            (out if c.type == "compound_statement" else stack).append(c)
    return out


def parse_cpp(path: str, text: str, *, language: str = "cpp", scope: str = "other",
              file_sha: str = "", settings: ChunkSettings | None = None) -> ParsedFile:
    """Chunks and file facts of one C/C++/CUDA file. Never raises: returns what it could, with
    the failure counted in ParsedFile.failures."""
    return parse_guarded(path, lambda: _FileParser(path, text, language, scope, file_sha, settings))
