"""Identity of papers: the ONE place that normalises identifiers, titles and names.

Every other module asks this one whether two spellings denote the same work, so DOI prefixes,
arXiv versions, LaTeX in titles and accents in surnames are handled identically everywhere.
Identifiers are carried as "scheme:value" strings ("doi:10.1/x", "arxiv:2205.11052",
"openalex:W123"), which makes a record's identity a plain set.
"""
from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

SCHEMES = ("doi", "arxiv", "openalex", "pmid", "pmcid", "isbn", "url")

_DOI_PREFIX = re.compile(r"^(?:https?://)?(?:dx\.|www\.)?doi\.org/|^doi:\s*|^https?://hdl\.handle\.net/",
                         re.I)
_DOI_SHAPE = re.compile(r"^10\.\d{4,9}/\S+$")
# arXiv's own DOIs (10.48550/arXiv.<id>) are aliases of the arXiv id.
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.I)
_ARXIV_PREFIX = re.compile(r"^(?:arxiv:\s*|(?:https?://)?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)",
                           re.I)
_ARXIV_NEW = re.compile(r"^(\d{4}\.\d{4,5})(?:v\d+)?$")
_ARXIV_OLD = re.compile(r"^([a-z][a-z\-]*(?:\.[a-z]{2})?/\d{7})(?:v\d+)?$", re.I)
_OPENALEX = re.compile(r"^(?:https?://(?:api\.)?openalex\.org/(?:works/)?)?(w\d+)$", re.I)
_TRAILING = ".,;:'\"]}>"


def _strip_trailing(value: str) -> str:
    """Drop sentence punctuation after an identifier; a ')' only if it is unbalanced."""
    while value:
        if value[-1] in _TRAILING:
            value = value[:-1]
        elif value[-1] == ")" and value.count(")") > value.count("("):
            value = value[:-1]
        else:
            break
    return value


def normalize_doi(value: str | None) -> str | None:
    """'https://doi.org/10.1000/ABC.' -> '10.1000/abc'; None when it is not a DOI."""
    if not value:
        return None
    v = unquote(value.strip())
    for _ in range(2):  # "doi: https://doi.org/..." happens in the wild
        v = _DOI_PREFIX.sub("", v).strip()
    v = _strip_trailing(v).lower()
    return v if _DOI_SHAPE.match(v) else None


def normalize_arxiv(value: str | None) -> str | None:
    """'arXiv:2205.11052v3', 'https://arxiv.org/pdf/2205.11052v1.pdf', 'hep-th/9901001v2',
    '10.48550/arXiv.2205.11052' -> the bare id without version; None when not an arXiv id."""
    if not value:
        return None
    v = value.strip()
    doi = normalize_doi(v) if "10.48550" in v else None
    if doi:
        m = _ARXIV_DOI.match(doi)
        v = m.group(1) if m else v
    v = _ARXIV_PREFIX.sub("", v).strip()
    v = re.sub(r"\.pdf$", "", _strip_trailing(v), flags=re.I)
    if m := _ARXIV_NEW.match(v):
        yymm, number = m.group(1).split(".")
        # YYMM with a valid month; 4-digit numbers until 2014, 5-digit from 2015
        if 1 <= int(yymm[2:]) <= 12 and len(number) == (5 if int(yymm[:2]) >= 15 else 4):
            return m.group(1)
        return None
    if m := _ARXIV_OLD.match(v):
        archive, number = m.group(1).split("/")
        name, _, subject = archive.partition(".")
        return f"{name.lower()}{'.' + subject.upper() if subject else ''}/{number}"
    return None


def normalize_openalex(value: str | None) -> str | None:
    if not value:
        return None
    m = _OPENALEX.match(value.strip())
    return m.group(1).upper() if m else None


def normalize_isbn(value: str | None) -> str | None:
    if not value:
        return None
    digits = re.sub(r"[^0-9Xx]", "", value).upper()
    return digits if len(digits) in (10, 13) else None


def normalize_id(scheme: str, value: str | None) -> str | None:
    """Normalise one identifier of a known scheme; None if it does not parse."""
    if value is None:
        return None
    scheme = scheme.lower()
    if scheme == "doi":
        return normalize_doi(value)
    if scheme in ("arxiv", "eprint"):
        return normalize_arxiv(value)
    if scheme == "openalex":
        return normalize_openalex(value)
    if scheme == "isbn":
        return normalize_isbn(value)
    if scheme in ("pmid", "pmcid"):
        v = re.sub(r"^(?:pmid:|pmcid:|https?://\S+/)", "", value.strip(), flags=re.I)
        return v.upper() if scheme == "pmcid" else (v if v.isdigit() else None)
    if scheme == "url":
        return normalize_url(value)
    return value.strip() or None


def normalize_url(value: str | None) -> str | None:
    if not value:
        return None
    v = _strip_trailing(value.strip())
    v = re.sub(r"^https?://(www\.)?", "", v, flags=re.I).rstrip("/")
    return v.lower() or None


def canonical_ids(ids: dict[str, str]) -> dict[str, str]:
    """Normalise a scheme->value dict and unify aliases (an arXiv DOI also yields its arXiv id,
    a doi.org or arxiv.org URL yields the DOI or arXiv id)."""
    out: dict[str, str] = {}
    for scheme, value in ids.items():
        norm = normalize_id(scheme, value)
        if norm:
            out[scheme.lower() if scheme != "eprint" else "arxiv"] = norm
    doi = out.get("doi")
    if doi and (m := _ARXIV_DOI.match(doi)):
        out.setdefault("arxiv", normalize_arxiv(m.group(1)) or m.group(1))
    url = ids.get("url")
    if url:
        if "doi" not in out and (d := normalize_doi(url)):
            out["doi"] = d
        if "arxiv" not in out and (a := normalize_arxiv(url)):
            out["arxiv"] = a
    return out


def id_keys(ids: dict[str, str]) -> set[str]:
    """The "scheme:value" strings a record can be found by (URLs excluded: not an identity)."""
    return {f"{s}:{v}" for s, v in canonical_ids(ids).items() if s != "url"}


def parse_identifier(text: str) -> tuple[str, str] | None:
    """Recognise a free-standing identifier of any supported form: ('doi', '10.x/y'), ..."""
    t = text.strip()
    if m := re.match(r"^(doi|arxiv|openalex|pmid|pmcid|isbn):\s*(.+)$", t, re.I):
        scheme = m.group(1).lower()
        norm = normalize_id(scheme, m.group(2))
        return (scheme, norm) if norm else None
    if a := normalize_arxiv(t):
        return ("arxiv", a)
    if d := normalize_doi(t):
        return ("doi", d)
    if o := normalize_openalex(t):
        return ("openalex", o)
    return None


# ---- text -------------------------------------------------------------------------------------

def latex_to_text(value: str) -> str:
    """BibTeX field text to plain Unicode ({\\"o} -> ö, braces dropped, -- -> en dash)."""
    if not value:
        return ""
    if "\\" in value or "$" in value:
        try:
            from pylatexenc.latex2text import LatexNodes2Text

            # '%' is a LaTeX comment; keep a literal per cent sign rather than losing the tail.
            value = LatexNodes2Text().latex_to_text(re.sub(r"(?<!\\)%", r"\\%", value))
        except Exception:  # noqa: BLE001 - malformed LaTeX: fall back to brace stripping
            pass
    value = value.replace("{", "").replace("}", "").replace("``", "\u201c").replace("''", "\u201d")
    return re.sub(r"\s+", " ", value).strip()


def fold(value: str) -> str:
    """Lower-case ASCII folding: 'Nédélec' -> 'nedelec', 'Szegő' -> 'szego'."""
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def normalize_title(title: str | None) -> str:
    """Title comparison key: LaTeX removed, accents folded, punctuation and case ignored."""
    if not title:
        return ""
    t = fold(latex_to_text(title))
    return re.sub(r"[^a-z0-9]+", " ", t).strip()


def surname(author: str) -> str:
    """Folded surname of 'Last, First' or 'First Last' ('{LehrFEM++ developers}' -> itself)."""
    a = latex_to_text(author).strip()
    if not a:
        return ""
    if "," in a:
        last = a.split(",", 1)[0]
    else:
        parts = a.split()
        # prefixes such as "van der" belong to the surname but are not how papers are cited
        last = parts[-1] if parts else a
    last = last.split()[-1] if last.split() else last
    return re.sub(r"[^a-z\-']", "", fold(last))


def same_title_and_year(t1: str, y1: int | None, t2: str, y2: int | None, tolerance: int = 1) -> bool:
    """The fallback identity rule: identical normalised titles and years within `tolerance`."""
    n1, n2 = normalize_title(t1), normalize_title(t2)
    if not n1 or n1 != n2:
        return False
    if y1 is None or y2 is None:
        return y1 is None and y2 is None
    return abs(y1 - y2) <= tolerance


def make_key(authors: list[str], year: int | None, title: str) -> str:
    """A BibTeX-style key for records that arrive without one: surname + year + title word."""
    first = surname(authors[0]) if authors else "anon"
    words = [w for w in normalize_title(title).split() if len(w) > 3 and w not in _KEY_STOP]
    return re.sub(r"[^a-z0-9]", "", f"{first or 'anon'}{year or ''}{words[0] if words else ''}")


_KEY_STOP = {"with", "from", "that", "this", "into", "über", "uber", "their", "using", "about"}
