"""The paper record and how two records of the same work are combined."""
from __future__ import annotations

from pydantic import BaseModel, Field

from ..contracts.models import PaperLink
from . import identity

# Fields that take a value from a later source only when the record has none yet.
_FILL_FIELDS = ("title", "year", "venue", "abstract", "url", "entry_type")


class PaperRecord(BaseModel):
    """One publication. `sources` names, per field, where its value came from
    ("bibtex:lib.bib", "csl-json:x.json", "openalex", "crossref", "arxiv", "cff:CITATION.cff")."""

    key: str  # citation key (the BibTeX key when imported from BibTeX)
    title: str
    ids: dict[str, str] = Field(default_factory=dict)  # scheme -> normalised value
    authors: list[str] = Field(default_factory=list)  # "Surname, Given" where known
    year: int | None = None
    venue: str = ""
    abstract: str = ""
    keywords: list[str] = Field(default_factory=list)
    citation_count: int | None = None
    url: str = ""
    entry_type: str = "misc"
    extra: dict[str, str] = Field(default_factory=dict)  # other fields (publisher, pages, note)
    aliases: list[str] = Field(default_factory=list)  # keys of records merged into this one
    sources: dict[str, str] = Field(default_factory=dict)

    @property
    def doi(self) -> str | None:
        return self.ids.get("doi")

    @property
    def arxiv(self) -> str | None:
        return self.ids.get("arxiv")

    def id_keys(self) -> set[str]:
        return identity.id_keys(self.ids)

    def normalized(self) -> "PaperRecord":
        """Canonical identifiers, a key when none was given, trimmed text."""
        ids = identity.canonical_ids({**self.ids, **({"url": self.url} if self.url else {})})
        ids.pop("url", None)
        key = self.key.strip() or identity.make_key(self.authors, self.year, self.title)
        return self.model_copy(update={"ids": ids, "key": key, "title": self.title.strip()})

    def link_url(self) -> str | None:
        if self.url:
            return self.url
        if self.doi:
            return f"https://doi.org/{self.doi}"
        if self.arxiv:
            return f"https://arxiv.org/abs/{self.arxiv}"
        return None

    def to_link(self, score: float = 0.0, reasons: list[str] | None = None,
                attached_to: list[str] | None = None, signal: str = "") -> PaperLink:
        return PaperLink(key=self.key, title=self.title, year=self.year, doi=self.doi,
                         url=self.link_url(), score=round(float(score), 4),
                         reasons=list(reasons or []), attached_to=list(attached_to or []),
                         signal=signal)

    def summary(self) -> dict:
        first = self.authors[0] if self.authors else ""
        return {"key": self.key, "title": self.title, "year": self.year, "doi": self.doi,
                "arxiv": self.arxiv, "first_author": first, "venue": self.venue}


def merge_records(base: PaperRecord, incoming: PaperRecord) -> tuple[PaperRecord, bool]:
    """Fold `incoming` into `base` (same work): base values win, gaps are filled from incoming,
    identifiers and keywords are united, the higher citation count is kept.
    Returns the merged record and whether anything changed."""
    data = base.model_dump()
    sources = dict(base.sources)
    src_of = lambda f: incoming.sources.get(f) or incoming.sources.get("*", "")  # noqa: E731
    for f in _FILL_FIELDS:
        new = getattr(incoming, f)
        if new and not data[f] and not (f == "entry_type" and new == "misc"):
            data[f] = new
            sources[f] = src_of(f)
    if incoming.authors and not data["authors"]:
        data["authors"] = list(incoming.authors)
        sources["authors"] = src_of("authors")
    if incoming.citation_count is not None and (data["citation_count"] or -1) < incoming.citation_count:
        data["citation_count"] = incoming.citation_count
        sources["citation_count"] = src_of("citation_count")
    for scheme, value in incoming.ids.items():
        if scheme not in data["ids"]:
            data["ids"][scheme] = value
            sources[f"ids.{scheme}"] = src_of(f"ids.{scheme}") or src_of("ids")
    seen = {k.lower() for k in data["keywords"]}
    added_kw = [k for k in incoming.keywords if k.lower() not in seen]
    if added_kw:
        data["keywords"] = data["keywords"] + added_kw
        sources["keywords"] = "+".join(dict.fromkeys(
            s for s in (sources.get("keywords", ""), src_of("keywords")) if s))
    for k, v in incoming.extra.items():
        data["extra"].setdefault(k, v)
    for alias in [incoming.key, *incoming.aliases]:
        if alias and alias != base.key and alias not in data["aliases"]:
            data["aliases"].append(alias)
    data["sources"] = sources
    merged = PaperRecord.model_validate(data)
    return merged, merged != base


def is_same_work(a: PaperRecord, b: PaperRecord) -> bool:
    """Shared identifier, else identical normalised title with years within one, unless both
    carry different DOIs (a paper and its erratum or a reprint are different records)."""
    if a.id_keys() & b.id_keys():
        return True
    if a.doi and b.doi and a.doi != b.doi:
        return False
    return identity.same_title_and_year(a.title, a.year, b.title, b.year)
