"""Docs (Markdown, reStructuredText, plain text) and build files cut into line-exact chunks.

Every chunk covers whole source lines: `text` is exactly lines start_line..end_line. Sections
that are too long are split at paragraph boundaries into parts "Title (part i/n)". A failure
here is a bug: it propagates, and the parse stage reports the file (ingest/stages.parse_file).
"""
from __future__ import annotations

import posixpath
import re
from typing import NamedTuple

from ...contracts.models import Chunk, ParsedFile
from ...contracts.settings import ChunkSettings
from ...index.layout import ChunkIds

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")
_TEXT_UNDERLINE = re.compile(r"^[ \t]*([=\-~*#^])\1{2,}[ \t]*$")
_BANNER = re.compile(r"copyright|licen[cs]e|spdx-|all rights reserved|permission is hereby",
                     re.I)
_CMAKE_OPEN = {"if", "foreach", "while", "function", "macro", "block"}
_CMAKE_CLOSE = {"endif", "endforeach", "endwhile", "endfunction", "endmacro", "endblock"}
_MAKE_OPEN = {"ifeq", "ifneq", "ifdef", "ifndef", "define"}
_MAKE_CLOSE = {"endif", "endef"}
_MINOR_COMMANDS = {"if", "else", "elseif", "endif", "foreach", "endforeach", "while",
                   "endwhile", "set", "unset", "list", "message", "string", "math", "return",
                   "endfunction", "endmacro", "block", "endblock", "break", "continue"}
_COMMAND = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.%$(){}/\- ]+?)[ \t]*::?(?!=)")
_MAKE_VAR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:[:+?!]?=)")


class _Section(NamedTuple):
    start: int  # 1-based, inclusive
    end: int
    title: str
    heading_path: tuple
    has_body: bool = True


# ---- shared -------------------------------------------------------------------------------

class _Builder:
    def __init__(self, path, lines, kind, language, scope, file_sha, settings):
        self.path, self.lines, self.kind = path, lines, kind
        self.language, self.scope, self.file_sha = language, scope, file_sha
        self.settings = settings or ChunkSettings()
        self.chunks: list[Chunk] = []
        self.ids = ChunkIds(path)

    def trim(self, start: int, end: int) -> tuple[int, int]:
        while start <= end and not self.lines[start - 1].strip():
            start += 1
        while end >= start and not self.lines[end - 1].strip():
            end -= 1
        return start, end

    def add(self, start: int, end: int, **fields) -> None:
        text = "\n".join(self.lines[start - 1: end])
        if len(text.strip()) < self.settings.min_chunk_chars:
            return
        cid = self.ids.new(self.kind, fields.get("qualified_name") or fields["name"], start)
        self.chunks.append(Chunk(id=cid, path=self.path, kind=self.kind, start_line=start,
                                 end_line=end, text=text, language=self.language,
                                 scope=self.scope, file_sha=self.file_sha, **fields))

    def paragraph_ranges(self, start: int, end: int, limit: int, fenced: bool) -> list:
        """Line ranges of at most ~limit characters, cut at blank lines (outside fences)."""
        paras, cur, fence = [], None, None
        for i in range(start, end + 1):
            line = self.lines[i - 1]
            if fenced:
                m = _FENCE.match(line)
                if m and (fence is None or (m.group(1)[0] == fence[0]
                                            and len(m.group(1)) >= len(fence))):
                    fence = None if fence else m.group(1)
            if not line.strip() and fence is None:
                if cur:
                    paras.append(cur)
                cur = None
            elif cur is None:
                cur = [i, i]
            else:
                cur[1] = i
        if cur:
            paras.append(cur)
        pieces = []
        for a, b in paras:  # a paragraph longer than the limit is cut between lines
            size, s = 0, a
            for i in range(a, b + 1):
                n = len(self.lines[i - 1]) + 1
                if size and size + n > limit:
                    pieces.append((s, i - 1))
                    s, size = i, 0
                size += n
            pieces.append((s, b))
        ranges, size = [], 0
        for a, b in pieces:
            n = sum(len(self.lines[i - 1]) + 1 for i in range(a, b + 1))
            if ranges:  # the blank lines between the paragraphs count too
                n_gap = sum(len(self.lines[i - 1]) + 1 for i in range(ranges[-1][1] + 1, a))
            if ranges and size + n_gap + n <= limit:
                n += n_gap
                ranges[-1][1] = b
                size += n
            else:
                ranges.append([a, b])
                size = n
        return [tuple(r) for r in ranges]

    def emit_sections(self, sections: list[_Section], fenced: bool) -> None:
        limit = self.settings.max_doc_chars
        for sec in sections:
            start, end = self.trim(sec.start, sec.end)
            if start > end or not sec.has_body:
                continue
            path = list(sec.heading_path)
            fields = dict(qualified_name=" > ".join(path), heading_path=path)
            size = sum(len(self.lines[i - 1]) + 1 for i in range(start, end + 1))
            ranges = self.paragraph_ranges(start, end, limit, fenced) if size > limit else []
            if len(ranges) < 2:
                self.add(start, end, name=sec.title, **fields)
                continue
            for i, (a, b) in enumerate(ranges, 1):
                self.add(a, b, name=f"{sec.title} (part {i}/{len(ranges)})", part=i,
                         parts=len(ranges), **fields)


def _sections(heads: list, lines: list[str], fallback: str) -> list[_Section]:
    """Sections from (line, level, title, first_body_line) headings; a preamble before the
    first heading is titled `fallback`. A heading with no body of its own gives no chunk (it
    still heads its subsections' heading_path)."""
    first = heads[0][0] if heads else len(lines) + 1
    sections = [_Section(1, first - 1, fallback, (fallback,))] if first > 1 else []
    stack: list = []
    for k, (line, level, title, body) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = heads[k + 1][0] - 1 if k + 1 < len(heads) else len(lines)
        has_body = any(lines[i - 1].strip() for i in range(body, end + 1))
        sections.append(_Section(line, end, title, tuple(t for _, t in stack), has_body))
    return sections


# ---- markdown / rst / text ----------------------------------------------------------------

def _markdown_heads(lines: list[str]) -> list:
    heads, fence, skip_to = [], None, 0
    if lines and lines[0].strip() == "---":  # YAML front matter
        skip_to = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() in
                        ("---", "...")), 0)
    for i, line in enumerate(lines, 1):
        if i <= skip_to:
            continue
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            continue
        if fence is not None:
            continue
        m = _ATX.match(line)
        if m:
            heads.append((i, len(m.group(1)), (m.group(2) or "").strip(), i + 1))
            continue
        m = _SETEXT.match(line)
        prev = lines[i - 2] if i >= 2 else ""
        if m and i - 1 > skip_to and prev.strip() and not prev.startswith((" " * 4, "\t")) \
                and not _ATX.match(prev) and not _FENCE.match(prev) \
                and not (heads and heads[-1][0] == i - 1) and not prev.lstrip().startswith(
                    ("- ", "* ", "+ ", ">", "|")):
            heads.append((i - 1, 1 if m.group(1)[0] == "=" else 2, prev.strip(), i + 1))
    return heads


def _rst_heads(lines: list[str]) -> list:
    heads, styles, i, n = [], [], 0, len(lines)
    while i < n:
        line = lines[i]
        over = _RST_ADORN.match(line)
        if over and i + 2 < n and lines[i + 1].strip() and _RST_ADORN.match(lines[i + 2]) \
                and lines[i + 2].strip() == line.strip() and not (i > 0 and lines[i - 1].strip()
                                                                   and not _RST_ADORN.match(
                                                                       lines[i - 1])):
            style = (line.strip()[0], True)
            styles += [style] if style not in styles else []
            heads.append((i + 1, styles.index(style) + 1, lines[i + 1].strip(), i + 4))
            i += 3
            continue
        if i + 1 < n and line.strip() and not line[0].isspace() and not _RST_ADORN.match(line):
            under = _RST_ADORN.match(lines[i + 1])
            title = line.strip()
            ul = lines[i + 1].strip()
            if under and (len(ul) >= len(title) or (len(ul) >= 3 and ul[0] != ":")) \
                    and not (i > 0 and lines[i - 1].strip()):
                style = (ul[0], False)
                styles += [style] if style not in styles else []
                heads.append((i + 1, styles.index(style) + 1, title, i + 3))
                i += 2
                continue
        i += 1
    return heads


def _text_heads(lines: list[str]) -> list:
    heads = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or len(s) > 80:
            continue
        prev_blank = i == 0 or not lines[i - 1].strip()
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if prev_blank and _TEXT_UNDERLINE.match(nxt) and not _TEXT_UNDERLINE.match(line):
            level = {"=": 1, "-": 2}.get(nxt.strip()[0], 3)
            heads.append((i + 1, level, s, i + 3))
        elif prev_blank and sum(c.isalpha() for c in s) >= 3 and s.upper() == s \
                and not any(c.islower() for c in s) \
                and not _TEXT_UNDERLINE.match(line):
            heads.append((i + 1, 1, s.rstrip(":"), i + 2))
    return heads


# \section{Title}, \subsection*[short]{Title}: LaTeX's sectioning commands, outermost first.
_LATEX_LEVELS = {"part": 1, "chapter": 2, "section": 3, "subsection": 4, "subsubsection": 5,
                 "paragraph": 6}
_LATEX_HEAD = re.compile(r"^\s*\\(part|chapter|section|subsection|subsubsection|paragraph)"
                         r"\*?\s*(?:\[[^\]]*\])?\s*\{")


def _latex_title(rest: str) -> str:
    """The text of a braced argument (nested braces kept to their words; an argument left open
    on its line ends at the line's end), without commands: `\\emph{CFL} number` → `CFL number`."""
    depth, out = 1, []
    for ch in rest:
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            break
        out.append(ch)
    title = re.sub(r"\\[A-Za-z]+\*?|[{}$]", "", "".join(out)).replace("~", " ")
    return " ".join(title.replace("\\", "").split())


def _latex_heads(lines: list[str]) -> list:
    heads = []
    for i, line in enumerate(lines):
        m = _LATEX_HEAD.match(line)
        if m:
            title = _latex_title(line[m.end():]) or m.group(1)
            heads.append((i + 1, _LATEX_LEVELS[m.group(1)], title, i + 2))
    return heads


def _first_line_sections(b: _Builder, start: int, end: int) -> list[_Section]:
    """Heading-less text: paragraphs packed up to max_doc_chars, titled by their first line."""
    out = []
    for a, z in b.paragraph_ranges(start, end, b.settings.max_doc_chars, fenced=False):
        title = b.lines[a - 1].strip()
        title = title if len(title) <= 80 else title[:77] + "..."
        out.append(_Section(a, z, title, (title,)))
    return out


def chunk_doc(path: str, text: str, *, fmt: str, scope: str = "docs", file_sha: str = "",
              settings: ChunkSettings | None = None) -> ParsedFile:
    """Doc sections of a Markdown ("markdown"), reStructuredText ("rst"), LaTeX ("latex") or
    plain ("text") file."""
    b = _Builder(path, text.split("\n"), "doc_section", fmt, scope, file_sha, settings)
    name = posixpath.basename(path) or path
    if fmt == "markdown":
        b.emit_sections(_sections(_markdown_heads(b.lines), b.lines, name), fenced=True)
    elif fmt == "rst":
        b.emit_sections(_sections(_rst_heads(b.lines), b.lines, name), fenced=False)
    elif fmt == "latex" and (latex := _latex_heads(b.lines)):
        b.emit_sections(_sections(latex, b.lines, name), fenced=False)
    else:  # plain text, and a LaTeX file without sectioning commands
        heads = _text_heads(b.lines)
        first = heads[0][0] if heads else len(b.lines) + 1
        secs = _first_line_sections(b, 1, first - 1) if first > 1 else []
        secs += [s for s in _sections(heads, b.lines, name) if heads and s.start >= first]
        b.emit_sections(secs, fenced=False)
    return ParsedFile(path=path, chunks=b.chunks)


# ---- build files --------------------------------------------------------------------------

def _build_boundaries(lines: list[str], make: bool) -> dict[int, int]:
    """Candidate window starts (1-based line -> tier; 1 best): top-level commands after a
    blank line, then nested ones after a blank line, then any command start."""
    out: dict[int, int] = {}
    paren, depth, cont = 0, 0, False
    for i, line in enumerate(lines, 1):
        s = line.strip()
        blank_before = i == 1 or not lines[i - 2].strip()
        starts = s and paren == 0 and not cont and (not make or not line.startswith("\t"))
        word = (re.match(r"[A-Za-z_]\w*", s) or [None])[0] if starts else None
        w = (word or "").lower()
        if starts:
            closing = w in (_MAKE_CLOSE if make else _CMAKE_CLOSE) or w in ("else", "elseif")
            if blank_before:
                out[i] = 1 if depth == 0 else 2
            elif (word or s.startswith("#")) and not closing:
                out[i] = 3
        if make:
            cont = line.rstrip().endswith("\\")
            depth += (w in _MAKE_OPEN) - (w in _MAKE_CLOSE) if starts else 0
        else:
            code = re.sub(r'"(?:\\.|[^"\\])*"', '""', line).split("#", 1)[0]
            if starts and _COMMAND.match(s):
                depth += (w in _CMAKE_OPEN) - (w in _CMAKE_CLOSE)
            paren = max(0, paren + code.count("(") - code.count(")"))
        depth = max(depth, 0)
    return out


def _command_names(lines: list[str], start: int, end: int, make: bool) -> list[str]:
    names: dict[str, None] = {}
    minor: dict[str, None] = {}
    for i in range(start, end + 1):
        line = lines[i - 1]
        if make:
            m = None if line.startswith(("\t", " ", "#")) else (
                _MAKE_VAR.match(line) or _MAKE_TARGET.match(line))
            if m:
                (names if m.re is _MAKE_TARGET else minor)[m.group(1).strip()] = None
            continue
        m = _COMMAND.match(line.strip())
        if m:
            w = m.group(1).lower()
            (minor if w in _MINOR_COMMANDS else names)[w] = None
    picked = list(names) or list(minor)
    return picked[:3]


def chunk_build(path: str, text: str, *, scope: str = "build", file_sha: str = "",
                settings: ChunkSettings | None = None, language: str = "",
                kind: str = "build") -> ParsedFile:
    """Windows of a CMakeLists.txt / *.cmake / Makefile, cut at command boundaries.
    `language` defaults to "make" for Makefiles and "cmake" otherwise; `kind` "script" gives
    scripts and CI configs the same windows under their own kind."""
    base = posixpath.basename(path)
    make = base.lower() in ("makefile", "gnumakefile") or base.lower().endswith((".mk", ".make"))
    b = _Builder(path, text.split("\n"), kind, language or ("make" if make else "cmake"),
                 scope, file_sha, settings)
    lines = b.lines
    head = []
    for line in lines:
        if line.strip().startswith("#"):
            head.append(line.strip().lstrip("#").strip())
        elif line.strip() or head:
            break
    head = [h for h in head if h.strip("-=#*~_ ")]  # drop ruler lines
    leading = "\n".join(head).strip()
    leading = "" if _BANNER.search(leading) else leading
    window = max(1, b.settings.build_window_lines)
    cuts = _build_boundaries(lines, make)
    start, n = 1, len(lines)
    while start <= n:
        if start + window - 1 >= n:
            ranges_end = n
        else:  # best tier, then latest, among boundaries past the first third
            cands = [c for c in range(start + 1, start + window + 1) if c in cuts]
            pool = [c for c in cands if c > start + window // 3] or cands
            best = max(pool, key=lambda c: (-cuts[c], c)) if pool else start + window
            ranges_end = best - 1
        s, e = b.trim(start, ranges_end)
        if s <= e:
            names = _command_names(lines, s, e, make)
            name = f"{base}: {', '.join(names)}" if names else base
            b.add(s, e, name=name, qualified_name=name, comment=leading)
        start = ranges_end + 1
    return ParsedFile(path=path, chunks=b.chunks, leading_comment=leading)
