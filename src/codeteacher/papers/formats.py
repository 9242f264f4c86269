"""Import (BibTeX, CSL-JSON, JSONL, CITATION.cff) and export (JSONL, BibTeX) of paper records.

Parsers never raise on bad entries: they return the good records plus "source:line: message"
problems, so one malformed entry costs that entry only.
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from pydantic import ValidationError

from ..contracts.errors import UserError
from . import identity
from .model import PaperRecord

# BibTeX fields mapped onto record fields; everything else is kept in `extra`.
_VENUE_FIELDS = ("journal", "booktitle", "series", "institution", "organization",
                 "howpublished", "school", "publisher")
_ID_FIELDS = {"doi": "doi", "isbn": "isbn", "pmid": "pmid", "pmcid": "pmcid"}
_HANDLED = {"title", "author", "year", "date", "abstract", "keywords", "url", "eprint",
            "archiveprefix", "eprinttype", "arxiv", *_ID_FIELDS}
_EXPORT_VENUE = {"article": "journal", "inproceedings": "booktitle", "incollection": "booktitle",
                 "conference": "booktitle", "techreport": "institution", "manual": "organization",
                 "book": "publisher", "phdthesis": "school", "mastersthesis": "school"}


def _year(value) -> int | None:
    m = re.search(r"\b(1[5-9]\d\d|20\d\d)\b", str(value or ""))
    return int(m.group(1)) if m else None


def _split_authors(value: str) -> list[str]:
    """Split on top-level ' and ' (not inside braces); 'First Last' becomes 'Last, First'."""
    parts, depth, cur = [], 0, []
    tokens = re.split(r"(\{|\}|\s+and\s+)", value)
    for tok in tokens:
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
        if depth == 0 and re.fullmatch(r"\s+and\s+", tok or ""):
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(tok)
    parts.append("".join(cur))
    out = []
    for p in parts:
        p = p.strip()
        if not p or p.lower() == "others":
            continue
        corporate = p.startswith("{") and p.endswith("}")
        text = identity.latex_to_text(p)
        if not corporate and "," not in text and len(text.split()) > 1:
            words = text.split()
            text = f"{words[-1]}, {' '.join(words[:-1])}"
        out.append(text)
    return out


def _keywords(value: str) -> list[str]:
    return [k.strip() for k in re.split(r"[;,]", identity.latex_to_text(value)) if k.strip()]


def _unwrap(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and ((v[0] == "{" and v[-1] == "}") or (v[0] == '"' and v[-1] == '"')):
        return v[1:-1]
    return v


def record_from_bibtex_fields(key: str, entry_type: str, fields: dict[str, str],
                              source: str) -> PaperRecord:
    f = {k.lower(): v for k, v in fields.items()}
    ids = {scheme: f[name] for name, scheme in _ID_FIELDS.items() if f.get(name)}
    eprint = f.get("eprint") or f.get("arxiv")
    archive = (f.get("archiveprefix") or f.get("eprinttype") or "arxiv").lower()
    if eprint and archive == "arxiv":
        ids["arxiv"] = eprint
    venue = next((identity.latex_to_text(f[v]) for v in _VENUE_FIELDS if f.get(v)), "")
    extra = {k: identity.latex_to_text(v) for k, v in f.items() if k not in _HANDLED}
    return PaperRecord(
        key=key, entry_type=entry_type.lower(), title=identity.latex_to_text(f.get("title", "")),
        authors=_split_authors(f.get("author", "")), year=_year(f.get("year") or f.get("date")),
        venue=venue, abstract=identity.latex_to_text(f.get("abstract", "")),
        keywords=_keywords(f.get("keywords", "")), url=f.get("url", "").strip(), ids=ids,
        extra=extra, sources={"*": source})


def parse_bibtex(text: str, source: str = "bibtex") -> tuple[list[PaperRecord], list[str]]:
    """Entries as records; malformed blocks reported as 'source:LINE: ...' and skipped."""
    import bibtexparser

    logging.getLogger("bibtexparser").setLevel(logging.ERROR)  # we report failures ourselves
    lib = bibtexparser.parse_string(text)
    label = f"bibtex:{source}"
    found: list[tuple[int, PaperRecord]] = []
    problems: list[str] = []
    for e in lib.entries:
        fields = {k: v.value for k, v in e.fields_dict.items()}
        found.append((e.start_line, record_from_bibtex_fields(e.key, e.entry_type, fields, label)))
    for block in lib.failed_blocks:
        line = (block.start_line or 0) + 1
        entry = getattr(block, "ignore_error_block", None)
        if type(block).__name__ == "DuplicateBlockKeyBlock" and entry is not None:
            fields = {k: _unwrap(str(v.value)) for k, v in entry.fields_dict.items()}
            found.append((block.start_line, record_from_bibtex_fields(
                entry.key, entry.entry_type, fields, label)))
            problems.append(f"{source}:{line}: duplicate key '{entry.key}' (merged if the same "
                            "work, otherwise stored under a new key)")
            continue
        err = getattr(block, "error", None)
        reason = getattr(err, "abort_reason", None) or str(err or "") or "unparsable block"
        head = (block.raw or "").strip().splitlines()[0][:60] if block.raw else ""
        problems.append(f"{source}:{line}: malformed entry skipped ({reason.strip()}): {head}")
    records = []
    for start, rec in sorted(found, key=lambda t: t[0]):
        if not rec.title:
            problems.append(f"{source}:{start + 1}: entry '{rec.key}' has no title, skipped")
            continue
        records.append(rec)
    return records, problems


# ---- CSL-JSON ---------------------------------------------------------------------------------

_CSL_TYPES = {"article-journal": "article", "article": "article", "paper-conference":
              "inproceedings", "book": "book", "chapter": "incollection", "report": "techreport",
              "thesis": "phdthesis", "manuscript": "unpublished", "software": "software"}


def _csl_name(a: dict) -> str:
    if a.get("literal"):
        return str(a["literal"])
    family, given = a.get("family", ""), a.get("given", "")
    return f"{family}, {given}".strip(", ") if given else family


def record_from_csl(item: dict, source: str) -> PaperRecord:
    issued = item.get("issued") or {}
    parts = issued.get("date-parts") or [[None]]
    year = _year(parts[0][0] if parts and parts[0] else None) or _year(issued.get("raw"))
    container = item.get("container-title") or ""
    if isinstance(container, list):
        container = container[0] if container else ""
    title = item.get("title") or ""
    if isinstance(title, list):
        title = title[0] if title else ""
    keywords = item.get("keyword") or ""
    ids = {"doi": item.get("DOI") or "", "isbn": item.get("ISBN") or "",
           "pmid": item.get("PMID") or "", "pmcid": item.get("PMCID") or ""}
    note = str(item.get("note") or "")
    if m := re.search(r"arxiv:\s*(\S+)", note, re.I):
        ids["arxiv"] = m.group(1)
    count = item.get("is-referenced-by-count")
    return PaperRecord(
        key=str(item.get("id") or ""), title=re.sub(r"\s+", " ", str(title)).strip(),
        entry_type=_CSL_TYPES.get(item.get("type", ""), "misc"),
        authors=[_csl_name(a) for a in item.get("author") or [] if isinstance(a, dict)],
        year=year, venue=str(container), abstract=_strip_tags(str(item.get("abstract") or "")),
        keywords=_keywords(keywords) if isinstance(keywords, str) else list(keywords),
        url=str(item.get("URL") or ""), ids={k: str(v) for k, v in ids.items() if v},
        citation_count=int(count) if isinstance(count, int) else None,
        sources={"*": source})


def _strip_tags(text: str) -> str:
    """JATS/HTML abstracts ('<jats:p>...') to plain text."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text)).strip()


def parse_csl_json(text: str, source: str = "csl-json") -> tuple[list[PaperRecord], list[str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [f"{source}:{exc.lineno}: not valid JSON ({exc.msg})"]
    items = data.get("items", [data]) if isinstance(data, dict) else data
    if not isinstance(items, list):
        return [], [f"{source}: expected a CSL-JSON array of items"]
    records, problems = [], []
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict):
            problems.append(f"{source}: item {i} is not an object, skipped")
            continue
        try:
            rec = record_from_csl(item, f"csl-json:{source}")
        except (ValidationError, TypeError, ValueError, IndexError) as exc:
            problems.append(f"{source}: item {i} skipped ({str(exc).splitlines()[0]})")
            continue
        if not rec.title:
            problems.append(f"{source}: item {i} ('{rec.key}') has no title, skipped")
            continue
        records.append(rec)
    return records, problems


# ---- JSONL ------------------------------------------------------------------------------------

def parse_jsonl(text: str, source: str = "jsonl") -> tuple[list[PaperRecord], list[str]]:
    records, problems = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = PaperRecord.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            problems.append(f"{source}:{n}: invalid record ({'.'.join(map(str, first['loc']))}: "
                            f"{first['msg']}), skipped")
            continue
        if not rec.sources:
            rec.sources = {"*": f"jsonl:{source}"}
        records.append(rec)
    return records, problems


# ---- CITATION.cff -----------------------------------------------------------------------------

def _cff_record(obj: dict, source: str, fallback_key: str) -> PaperRecord:
    authors = []
    for a in obj.get("authors") or []:
        if isinstance(a, dict):
            if a.get("family-names"):
                authors.append(f"{a['family-names']}, {a.get('given-names', '')}".strip(", "))
            elif a.get("name"):
                authors.append(str(a["name"]))
    ids = {"doi": str(obj["doi"])} if obj.get("doi") else {}
    for ident in obj.get("identifiers") or []:
        if isinstance(ident, dict) and ident.get("type") == "doi" and "doi" not in ids:
            ids["doi"] = str(ident.get("value") or "")
    url = str(obj.get("url") or obj.get("repository-code") or "")
    if a := identity.normalize_arxiv(url):
        ids["arxiv"] = a
    conf = obj.get("conference")
    venue = obj.get("journal") or (conf.get("name") if isinstance(conf, dict) else "") or ""
    year = _year(obj.get("year") or obj.get("date-published") or obj.get("date-released"))
    ctype = str(obj.get("type") or "software")
    return PaperRecord(
        key="", title=str(obj.get("title") or "").strip(), authors=authors, year=year,
        venue=str(venue or ""), abstract=str(obj.get("abstract") or ""), url=url,
        keywords=[str(k) for k in obj.get("keywords") or []],
        ids={k: v for k, v in ids.items() if v},
        entry_type={"article": "article", "conference-paper": "inproceedings",
                    "book": "book", "software": "software"}.get(ctype, "misc"),
        sources={"*": source}, extra={"cff_role": fallback_key})


def parse_cff(text: str, source: str = "CITATION.cff") -> tuple[list[PaperRecord], list[str]]:
    """The preferred citation first (what the authors ask to be cited), then the software
    itself, then its references."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        return [], [f"{source}{where}: not valid YAML ({str(exc).splitlines()[0]})"]
    if not isinstance(data, dict):
        return [], [f"{source}: expected a YAML mapping"]
    label = f"cff:{source}"
    objs = []
    if isinstance(data.get("preferred-citation"), dict):
        objs.append((data["preferred-citation"], "preferred-citation"))
    objs.append((data, "software"))
    objs += [(r, "reference") for r in data.get("references") or [] if isinstance(r, dict)]
    records, problems = [], []
    for obj, role in objs:
        try:
            rec = _cff_record(obj, label, role)
        except (ValidationError, TypeError, AttributeError) as exc:
            problems.append(f"{source}: {role} skipped ({str(exc).splitlines()[0]})")
            continue
        if rec.title:
            records.append(rec.normalized())
    return records, problems


# ---- files ------------------------------------------------------------------------------------

def load_file(path: str | Path) -> tuple[list[PaperRecord], list[str]]:
    """Parse a library file by extension (or content when the extension says nothing)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"no such file: {p}") from None
    except UnicodeDecodeError:
        raise UserError(f"{p}: not UTF-8 text") from None
    except IsADirectoryError:
        raise UserError(f"{p} is a directory") from None
    suffix = p.suffix.lower()
    name = p.name
    if suffix in (".bib", ".bibtex"):
        return parse_bibtex(text, name)
    if suffix in (".jsonl", ".ndjson"):
        return parse_jsonl(text, name)
    if suffix in (".json", ".csl", ".csljson"):
        return parse_csl_json(text, name)
    if suffix in (".cff",):
        return parse_cff(text, name)
    head = text.lstrip()[:1]
    if head == "@" or "\n@" in text[:5000]:
        return parse_bibtex(text, name)
    if head in "[{" and head:
        first = text.lstrip().splitlines()[0]
        if head == "{" and first.rstrip().endswith("}") and len(text.strip().splitlines()) > 1:
            return parse_jsonl(text, name)
        return parse_csl_json(text, name)
    raise UserError(f"{p}: unknown library format (use .bib, .json (CSL-JSON), .jsonl or .cff)")


# ---- export -----------------------------------------------------------------------------------

def _bib_escape(text: str) -> str:
    return re.sub(r"(?<!\\)([&%#])", r"\\\1", text.replace("{", "").replace("}", ""))


def to_bibtex(records: list[PaperRecord]) -> str:
    out = []
    for r in sorted(records, key=lambda r: r.key):
        etype = r.entry_type if r.entry_type and r.entry_type != "software" else "misc"
        fields: list[tuple[str, str]] = [("title", _bib_escape(r.title))]
        if r.authors:
            names = [f"{{{_bib_escape(a)}}}" if "," not in a and len(a.split()) > 1
                     else _bib_escape(a) for a in r.authors]
            fields.append(("author", " and ".join(names)))
        if r.year:
            fields.append(("year", str(r.year)))
        venue_field = _EXPORT_VENUE.get(etype, "howpublished")
        if r.venue and venue_field not in r.extra:
            fields.append((venue_field, _bib_escape(r.venue)))
        for k, v in sorted(r.extra.items()):
            if k not in ("cff_role",) and v:
                fields.append((k, _bib_escape(v)))
        for scheme in ("doi", "isbn", "pmid"):
            if r.ids.get(scheme):
                fields.append((scheme, r.ids[scheme]))
        if r.arxiv:
            fields += [("eprint", r.arxiv), ("archiveprefix", "arXiv")]
        if r.url:
            fields.append(("url", r.url))
        if r.abstract:
            fields.append(("abstract", _bib_escape(r.abstract)))
        if r.keywords:
            fields.append(("keywords", _bib_escape(", ".join(r.keywords))))
        width = max(len(k) for k, _ in fields)
        body = ",\n".join(f"  {k.ljust(width)} = {{{v}}}" for k, v in fields)
        out.append(f"@{etype}{{{r.key},\n{body}\n}}\n")
    return "\n".join(out)
