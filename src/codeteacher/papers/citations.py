"""Citations written in the code and docs: DOIs, arXiv ids, URLs, BibTeX blocks, CITATION.cff,
and author-year mentions ("Smith & Jones 1999", "Smith et al. (2016)", "Smith (2003)").

Extraction is purely textual; resolution matches against the library: identifiers exactly,
author-year by folded first-author surname + year, with ties broken by how many title words of
each candidate occur in the citing chunk.
"""
from __future__ import annotations

import re
from collections import defaultdict
from datetime import date
from pathlib import PurePosixPath
from typing import Iterable, Literal

from pydantic import BaseModel, Field

from ..contracts.models import Chunk
from . import identity
from .formats import parse_bibtex, parse_cff
from .model import PaperRecord, is_same_work

CitationKind = Literal["doi", "arxiv", "url", "bibtex", "cff", "author_year"]


class Citation(BaseModel):
    kind: CitationKind
    text: str  # as written (shortened)
    value: str  # normalised id, URL, BibTeX key, or "surname year"
    path: str = ""
    chunk_id: str = ""
    line: int = 0
    surnames: list[str] = Field(default_factory=list)  # author-year: folded, first author first
    year: int | None = None
    title: str = ""  # BibTeX / CFF: the cited work's title
    ids: dict[str, str] = Field(default_factory=dict)
    repo_level: bool = False  # found in the README / CITATION.cff of the repository
    resolved: str | None = None  # library key
    resolution: str = ""  # how it was resolved, or why not


_DOI_RE = re.compile(r"(?<![\w/.])(?:https?://(?:dx\.|www\.)?doi\.org/|doi:\s*)?"
                     r"(10\.\d{4,9}/[^\s\"'<>\[\]{}|\\^`]+)", re.I)
_ARXIV_RE = re.compile(r"(?:\barxiv[:\s]\s*|arxiv\.org/(?:abs|pdf)/)"
                       r"((?:\d{4}\.\d{4,5}|[a-z][a-z\-]*(?:\.[a-z]{2})?/\d{7})(?:v\d+)?)", re.I)
_URL_RE = re.compile(r"https?://[^\s<>\"'`)\]]+", re.I)
_BIB_START = re.compile(r"@([A-Za-z]+)\s*\{\s*[^\s,{}=]+\s*,")
_NAME = r"(?:(?:van|von|de|der|den|du|di|da|la|le|del)\s+)?[^\W\d_][\w'\u2019\-]*[^\W\d_]"
_AUTHOR_YEAR = re.compile(
    rf"(?<![\w.])(?P<first>{_NAME})"
    rf"(?:(?P<etal>\s+et\s+al\.?)|(?P<others>(?:\s*,\s*{_NAME})*)\s*,?\s*(?:&|\band\b)\s*"
    rf"(?P<last>{_NAME}))?"
    rf"\s*(?P<sep>,?\s*[(\[]?\s*|\s+)(?P<year>1[6-9]\d\d|20\d\d)[a-z]?\b")
# Capitalised words that precede years without being authors.
_NOT_NAMES = frozenset("""a an and the in on of for from to by since until before after during
version release copyright c year years january february march april may june july august
september october november december jan feb mar apr jun jul aug sep sept oct nov dec spring
summer autumn fall winter see also iso ieee ansi std standard c++ cpp cuda c++11 figure fig
table eq equation section chapter page pages vol volume no number issue edition ed isbn issn
doi arxiv http https license licence gpl mit bsd apache update updated revised modified created
written last rev draft spec visual studio gcc clang python windows ubuntu debian macos""".split())


def _possessive(name: str) -> str:
    return re.sub(r"['\u2019]s?$", "", name)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos)


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    """Blank out spans (keeping newlines) so later patterns do not count them twice."""
    chars = list(text)
    for s, e in spans:
        for i in range(s, e):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def _bibtex_blocks(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in _BIB_START.finditer(text):
        if spans and m.start() < spans[-1][1]:
            continue
        depth, i = 0, m.start()
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    spans.append((m.start(), i + 1))
                    break
            i += 1
    return spans


def extract_citations(text: str, *, path: str = "", chunk_id: str = "",
                      start_line: int = 1) -> list[Citation]:
    """All citations in one piece of text; `start_line` is the text's first line number."""
    out: list[Citation] = []
    base = dict(path=path, chunk_id=chunk_id, repo_level=is_repo_level(path))

    blocks = _bibtex_blocks(text)
    for s, e in blocks:
        records, _ = parse_bibtex(text[s:e], path or "text")
        for rec in records:
            r = rec.normalized()
            out.append(Citation(kind="bibtex", text=text[s:e][:80], value=r.key, title=r.title,
                                year=r.year, ids=r.ids, line=start_line + _line_of(text, s),
                                surnames=[identity.surname(a) for a in r.authors[:2]], **base))
    text = _mask(text, blocks)

    id_spans = []
    for m in _DOI_RE.finditer(text):
        doi = identity.normalize_doi(m.group(1))
        if doi is None:
            continue
        arxiv = identity.normalize_arxiv(doi)
        kind, value = ("arxiv", arxiv) if arxiv else ("doi", doi)
        out.append(Citation(kind=kind, text=m.group(0)[:80], value=value,
                            line=start_line + _line_of(text, m.start()), **base))
        id_spans.append((m.start(), m.end()))
    for m in _ARXIV_RE.finditer(text):
        value = identity.normalize_arxiv(m.group(1))
        if value:
            out.append(Citation(kind="arxiv", text=m.group(0)[:80], value=value,
                                line=start_line + _line_of(text, m.start()), **base))
            id_spans.append((m.start(), m.end()))
    text = _mask(text, id_spans)
    for m in _URL_RE.finditer(text):
        url = identity.normalize_url(m.group(0))
        if url and not re.match(r"(dx\.)?doi\.org/|arxiv\.org/", url):
            out.append(Citation(kind="url", text=m.group(0)[:80], value=url,
                                line=start_line + _line_of(text, m.start()), **base))
    text = _mask(text, [(m.start(), m.end()) for m in _URL_RE.finditer(text)])

    this_year = date.today().year + 1
    for m in _AUTHOR_YEAR.finditer(text):
        first = _possessive(m.group("first"))
        co = re.findall(_NAME, m.group("others") or "") + ([m.group("last")] if m.group("last") else [])
        second = _possessive(co[0]) if co else ""
        year = int(m.group("year"))
        if year > this_year or not first[:1].isupper() or first.lower() in _NOT_NAMES:
            continue
        if second and (not second[:1].isupper() or second.lower() in _NOT_NAMES):
            second = None
        surnames = [identity.surname(first)] + ([identity.surname(second)] if second else [])
        # "Name 2003" without et al./partner/parenthesis is weak: kept only if it resolves.
        strong = bool(m.group("etal") or co or "(" in m.group("sep") or "," in m.group("sep"))
        out.append(Citation(kind="author_year", text=m.group(0)[:80],
                            value=f"{surnames[0]} {year}", surnames=surnames, year=year,
                            line=start_line + _line_of(text, m.start()),
                            resolution="" if strong else "weak", **base))
    return out


def is_repo_level(path: str) -> bool:
    """README / CITATION files at the top of the repository (or its docs folder)."""
    p = PurePosixPath(path)
    top = str(p.parent) in ("", ".", "doc", "docs")
    return top and p.name.lower().startswith(("readme", "citation"))


def citations_in_chunks(chunks: Iterable[Chunk]) -> list[Citation]:
    """Citations in each chunk's comment and text, attached to that chunk (deduplicated)."""
    out: list[Citation] = []
    for ch in chunks:
        seen: set[tuple[str, str]] = set()
        parts = [(ch.text, ch.start_line)]
        if ch.comment and ch.comment.strip() not in ch.text:
            parts.insert(0, (ch.comment, ch.start_line))
        for text, line in parts:
            for c in extract_citations(text, path=ch.path, chunk_id=ch.id, start_line=line):
                if (c.kind, c.value) not in seen:
                    seen.add((c.kind, c.value))
                    out.append(c)
    return out


def citations_from_cff(text: str, path: str = "CITATION.cff") -> tuple[list[Citation], list[str]]:
    records, problems = parse_cff(text, path)
    cites = []
    for rec in records:
        role = rec.extra.get("cff_role", "")
        cites.append(Citation(kind="cff", text=f"{role}: {rec.title}"[:80], value=rec.key,
                              title=rec.title, year=rec.year, ids=rec.ids, path=path,
                              surnames=[identity.surname(a) for a in rec.authors[:2]],
                              repo_level=True))
    return cites, problems


# ---- resolution -------------------------------------------------------------------------------

_TITLE_STOP = frozenset("""a an and the of for in on to with by from via its their using use
method methods algorithm algorithms approach new note remarks""".split())


def title_words(title: str) -> set[str]:
    return {w for w in identity.normalize_title(title).split() if len(w) > 2 and w not in _TITLE_STOP}


class RecordIndex:
    """Lookups over library records for resolution and linking. Built from records, or from a
    prepared `LibraryState` plus `lookup(key)`, which fetches a record only when one is needed
    (a large library is never read whole to resolve a few citations)."""

    def __init__(self, records: Iterable[PaperRecord] = (), *, state=None, lookup=None):
        self._records: dict[str, PaperRecord] = {}
        self._lookup = lookup
        self.by_id: dict[str, str] = {}
        self.by_author_year: dict[tuple[str, int], list[str]] = defaultdict(list)
        self.by_url: dict[str, str] = {}
        self.by_title: dict[str, list[str]] = defaultdict(list)
        if state is not None:
            self.by_id = state.ids
            for k, keys in state.author_year.items():
                name, year = k.rsplit("|", 1)
                self.by_author_year[(name, int(year))] = keys
            self.by_url = state.urls
            self.by_title.update(state.titles)
        for r in records:
            self._records[r.key] = r
            for ident in r.id_keys():
                self.by_id.setdefault(ident, r.key)
            if r.authors and r.year:
                self.by_author_year[(identity.surname(r.authors[0]), r.year)].append(r.key)
            if u := identity.normalize_url(r.url):
                self.by_url.setdefault(u, r.key)
            if nt := identity.normalize_title(r.title):
                self.by_title[nt].append(r.key)

    def record(self, key: str) -> PaperRecord:
        rec = self._records.get(key)
        if rec is None and self._lookup is not None:
            rec = self._records[key] = self._lookup(key)
        if rec is None:
            raise KeyError(key)
        return rec

    def by_identifier(self, scheme: str, value: str) -> str | None:
        return self.by_id.get(f"{scheme}:{value}")

    def same_work(self, rec: PaperRecord) -> str | None:
        for ident in sorted(rec.id_keys()):
            if ident in self.by_id:
                return self.by_id[ident]
        for key in self.by_title.get(identity.normalize_title(rec.title), []):
            if is_same_work(rec, self.record(key)):
                return key
        return None


def resolve(citations: list[Citation], index: RecordIndex,
            context: dict[str, str] | None = None) -> list[Citation]:
    """Fill `resolved`/`resolution` in place; weak author-year mentions that do not resolve are
    dropped (they are mostly 'Version 2020'-style noise). `context` maps chunk id -> text used
    to break author-year ties."""
    context = context or {}
    kept = []
    for c in citations:
        key, how = None, ""
        if c.kind in ("doi", "arxiv"):
            key, how = index.by_identifier(c.kind, c.value), c.kind
        elif c.kind == "url":
            key, how = index.by_url.get(c.value), "url"
        elif c.kind in ("bibtex", "cff"):
            probe = PaperRecord(key=c.value, title=c.title, year=c.year, ids=c.ids)
            key = index.same_work(probe)
            how = "identifier or title+year"
        elif c.kind == "author_year" and c.year:
            key, how = _resolve_author_year(c, index, context.get(c.chunk_id, ""))
        if key:
            c.resolved, c.resolution = key, how
            kept.append(c)
        elif c.resolution != "weak" and c.kind != "url":
            c.resolution = how if how.startswith("ambiguous") else "not in library"
            kept.append(c)
    return kept


def _resolve_author_year(c: Citation, index: RecordIndex, text: str) -> tuple[str | None, str]:
    cands = list(index.by_author_year.get((c.surnames[0], c.year), []))
    if len(c.surnames) > 1 and len(cands) > 1:
        second = [k for k in cands if len(index.record(k).authors) > 1
                  and identity.surname(index.record(k).authors[1]) == c.surnames[1]]
        cands = second or cands
    if len(cands) <= 1:
        return (cands[0] if cands else None), "author-year"
    words = set(re.findall(r"[a-z0-9]+", identity.fold(text)))
    scored = sorted(((len(title_words(index.record(k).title) & words), k) for k in cands),
                    reverse=True)
    if scored[0][0] > scored[1][0]:
        return scored[0][1], "author-year + title words"
    return None, "ambiguous: " + ", ".join(k for _, k in scored)
