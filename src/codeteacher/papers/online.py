"""Optional online sources (OpenAlex, Crossref, arXiv) to resolve identifiers and enrich records.

Off unless `papers.online.enabled`; the library never needs them. Each client is polite (contact
e-mail, minimum spacing between requests), retries 429/5xx/connection failures with exponential
backoff honouring Retry-After, and caches successful responses on disk. A failure is reported
per source with its reason: a malformed body or an empty answer is an error, never a result.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable
from urllib.parse import quote

from pydantic import BaseModel, Field

from ..contracts.errors import UserError
from ..contracts.http import RetriesExhausted, send_with_retries
from ..contracts.jsonio import write_text
from ..contracts.settings.papers import PaperOnlineSettings
from . import identity
from .formats import record_from_csl
from .library import Library
from .model import PaperRecord, merge_records


class OnlineError(Exception):
    def __init__(self, source: str, message: str):
        super().__init__(f"{source}: {message}")
        self.source = source


def require_enabled(settings: PaperOnlineSettings) -> None:
    if not settings.enabled:
        raise UserError("online paper sources are disabled (set papers.online.enabled to true "
                        "in runtime_settings.json)")


class _Http:
    """GET with cache, spacing, and retries. `sleep` is injectable only to observe waits."""

    name = "http"

    def __init__(self, base_url: str, settings: PaperOnlineSettings, client=None,
                 sleep: Callable[[float], None] = time.sleep):
        import httpx

        self.base = base_url.rstrip("/")
        self.s = settings
        agent = "codeteacher/0.1" + (f" (mailto:{settings.mailto})" if settings.mailto else "")
        self.client = client or httpx.Client(timeout=settings.timeout_s, follow_redirects=True,
                                             headers={"User-Agent": agent})
        self.sleep = sleep
        self._last = 0.0
        self.requests = 0  # network requests made (cache hits excluded)

    def _cache_file(self, url: str, params: dict) -> Path | None:
        if not self.s.cache_dir:
            return None
        key = hashlib.sha256(json.dumps([url, sorted(params.items())]).encode()).hexdigest()
        return Path(self.s.cache_dir) / self.name / f"{key[:32]}.json"

    def get(self, path: str, params: dict | None = None) -> str:
        params = {k: v for k, v in (params or {}).items() if v not in (None, "")}
        url = f"{self.base}{path}"
        cache = self._cache_file(url, params)
        if cache and cache.is_file():
            try:
                return json.loads(cache.read_text(encoding="utf-8"))["body"]
            except (json.JSONDecodeError, KeyError, OSError):
                pass  # a damaged cache entry is refetched
        def space() -> None:  # polite spacing before every attempt
            wait = self.s.min_interval_s - (time.monotonic() - self._last)
            if wait > 0:
                self.sleep(wait)
            self._last = time.monotonic()
            self.requests += 1

        try:
            resp = send_with_retries(lambda: self.client.get(url, params=params),
                                     retries=self.s.max_retries, backoff_s=self.s.backoff_s,
                                     max_backoff_s=self.s.max_backoff_s, sleep=self.sleep,
                                     before=space)
        except RetriesExhausted as exc:
            last = f"HTTP {exc.response.status_code}" if exc.response is not None else \
                f"connection failed ({type(exc.error).__name__}: {exc.error})"
            raise OnlineError(self.name, f"{last} after {exc.attempts} attempts ({url})") from None
        if resp.status_code == 200:
            if cache:
                write_text(cache, json.dumps({"url": str(resp.url), "body": resp.text}))
            return resp.text
        if resp.status_code == 404:
            raise OnlineError(self.name, f"not found ({url})")
        raise OnlineError(self.name, f"HTTP {resp.status_code} for {url}")

    def get_json(self, path: str, params: dict | None = None) -> dict:
        body = self.get(path, params)
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise OnlineError(self.name, f"malformed response (not JSON: {exc.msg})") from None
        if not isinstance(data, dict):
            raise OnlineError(self.name, "malformed response (expected a JSON object)")
        return data


class OpenAlexClient(_Http):
    name = "openalex"

    def __init__(self, settings: PaperOnlineSettings, **kw):
        super().__init__(settings.openalex_url, settings, **kw)

    def work(self, scheme: str, value: str) -> PaperRecord:
        ref = {"doi": f"doi:{value}", "openalex": value, "pmid": f"pmid:{value}",
               "arxiv": f"doi:10.48550/arXiv.{value}"}.get(scheme)
        if ref is None:
            raise OnlineError(self.name, f"cannot look up {scheme} identifiers")
        data = self.get_json(f"/works/{quote(ref, safe=':/')}", {"mailto": self.s.mailto})
        return self.parse(data)

    def find_by_title(self, title: str, year: int | None) -> PaperRecord | None:
        data = self.get_json("/works", {"filter": f"title.search:{title.replace(',', ' ')}",
                                        "per-page": 5, "mailto": self.s.mailto})
        results = data.get("results")
        if not isinstance(results, list):
            raise OnlineError(self.name, "malformed response (no 'results' list)")
        for item in results:
            rec = self.parse(item)
            if identity.same_title_and_year(rec.title, rec.year, title, year) or (
                    year is None and identity.normalize_title(rec.title)
                    == identity.normalize_title(title)):
                return rec
        return None

    def parse(self, w: dict) -> PaperRecord:
        title = (w.get("display_name") or w.get("title")) if isinstance(w, dict) else None
        if not isinstance(title, str) or not title.strip() or not w.get("id"):
            raise OnlineError(self.name, "malformed response (work without id or title)")
        ids = {k: str(v) for k, v in (w.get("ids") or {}).items() if k in ("doi", "pmid", "pmcid")}
        ids["openalex"] = str(w["id"])
        if w.get("doi"):
            ids["doi"] = str(w["doi"])
        authors = []
        for a in w.get("authorships") or []:
            name = ((a or {}).get("author") or {}).get("display_name")
            if name:
                parts = name.split()
                authors.append(f"{parts[-1]}, {' '.join(parts[:-1])}" if len(parts) > 1 else name)
        source = ((w.get("primary_location") or {}).get("source") or {})
        keywords = [k.get("display_name") for k in w.get("keywords") or []
                    if isinstance(k, dict) and k.get("display_name")]
        return PaperRecord(
            key="", title=title, ids=ids, authors=authors, year=w.get("publication_year"),
            venue=source.get("display_name") or "", keywords=keywords,
            abstract=_inverted_abstract(w.get("abstract_inverted_index")),
            citation_count=w.get("cited_by_count"), sources={"*": self.name},
            entry_type={"article": "article", "book": "book", "book-chapter": "incollection",
                        "preprint": "misc"}.get(w.get("type") or "", "misc")).normalized()


def _inverted_abstract(inv) -> str:
    """OpenAlex ships abstracts as {word: [positions]}; rebuild the text."""
    if not isinstance(inv, dict):
        return ""
    pos = [(p, word) for word, ps in inv.items() if isinstance(ps, list) for p in ps]
    return " ".join(word for _, word in sorted(pos))


class CrossrefClient(_Http):
    name = "crossref"

    def __init__(self, settings: PaperOnlineSettings, **kw):
        super().__init__(settings.crossref_url, settings, **kw)

    def work(self, scheme: str, value: str) -> PaperRecord:
        if scheme != "doi":
            raise OnlineError(self.name, f"cannot look up {scheme} identifiers")
        data = self.get_json(f"/works/{quote(value, safe='/()')}", {"mailto": self.s.mailto})
        msg = data.get("message")
        if data.get("status") != "ok" or not isinstance(msg, dict):
            raise OnlineError(self.name, "malformed response (no work message)")
        rec = record_from_csl({**msg, "id": ""}, self.name)
        if not rec.title:
            raise OnlineError(self.name, "malformed response (work without title)")
        subjects = msg.get("subject") or []
        return rec.model_copy(update={"keywords": rec.keywords or list(subjects),
                                      "sources": {"*": self.name}}).normalized()


_ATOM = {"a": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}


class ArxivClient(_Http):
    name = "arxiv"

    def __init__(self, settings: PaperOnlineSettings, **kw):
        super().__init__(settings.arxiv_url, settings, **kw)

    def work(self, scheme: str, value: str) -> PaperRecord:
        if scheme != "arxiv":
            raise OnlineError(self.name, f"cannot look up {scheme} identifiers")
        body = self.get("", {"id_list": value, "max_results": 1})
        try:
            root = ET.fromstring(body)
        except ET.ParseError as exc:
            raise OnlineError(self.name, f"malformed response (not Atom XML: {exc})") from None
        entries = root.findall("a:entry", _ATOM)
        if root.tag != f"{{{_ATOM['a']}}}feed":
            raise OnlineError(self.name, "malformed response (not an Atom feed)")
        if not entries:
            raise OnlineError(self.name, f"no entry for arXiv:{value}")
        e = entries[0]
        text = lambda path: re.sub(r"\s+", " ", e.findtext(path, "", _ATOM)).strip()  # noqa: E731
        if "api/errors" in text("a:id") or text("a:title") == "Error":
            raise OnlineError(self.name, f"arXiv reports an error for {value}: {text('a:summary')}")
        authors = []
        for a in e.findall("a:author", _ATOM):
            parts = (a.findtext("a:name", "", _ATOM) or "").split()
            if parts:
                authors.append(f"{parts[-1]}, {' '.join(parts[:-1])}" if len(parts) > 1 else parts[0])
        year = text("a:published")[:4]
        ids = {"arxiv": value}
        if doi := text("arxiv:doi"):
            ids["doi"] = doi
        return PaperRecord(
            key="", title=text("a:title"), abstract=text("a:summary"), authors=authors,
            year=int(year) if year.isdigit() else None, venue=text("arxiv:journal_ref"),
            ids=ids, url=f"https://arxiv.org/abs/{value}", sources={"*": self.name},
            keywords=[c.get("term") for c in e.findall("a:category", _ATOM) if c.get("term")],
        ).normalized()


class ResolveResult(BaseModel):
    query: str
    record: PaperRecord | None = None
    sources: list[str] = Field(default_factory=list)  # sources that answered
    errors: dict[str, str] = Field(default_factory=dict)  # source -> reason


class Resolver:
    """Tries the sources that understand an identifier and merges what they return."""

    ORDER = {"doi": ("openalex", "crossref"), "arxiv": ("arxiv", "openalex"),
             "openalex": ("openalex",), "pmid": ("openalex",)}

    def __init__(self, settings: PaperOnlineSettings, **kw):
        require_enabled(settings)
        self.clients = {"openalex": OpenAlexClient(settings, **kw),
                        "crossref": CrossrefClient(settings, **kw),
                        "arxiv": ArxivClient(settings, **kw)}

    def resolve(self, ref: str) -> ResolveResult:
        parsed = identity.parse_identifier(ref)
        result = ResolveResult(query=ref)
        if not parsed:
            result.errors["input"] = f"not a DOI, arXiv, OpenAlex or PubMed id: {ref!r}"
            return result
        scheme, value = parsed
        for name in self.ORDER.get(scheme, ()):
            try:
                rec = self.clients[name].work(scheme, value)
            except OnlineError as exc:
                result.errors[name] = str(exc).split(": ", 1)[-1]
                continue
            rec.ids.setdefault(scheme, value)  # the work asked for, whatever else it is known by
            result.sources.append(name)
            result.record = rec if result.record is None else merge_records(result.record, rec)[0]
        return result

    def close(self) -> None:
        for c in self.clients.values():
            c.client.close()


class EnrichReport(BaseModel):
    enriched: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    errors: dict[str, dict[str, str]] = Field(default_factory=dict)  # ref -> source -> reason


def enrich_library(library: Library, settings: PaperOnlineSettings, keys: list[str] | None = None,
                   add_refs: list[str] | None = None, **kw) -> EnrichReport:
    """Fill gaps (abstract, OpenAlex id, citation count, ...) of library records from their
    identifiers, and add works for `add_refs` (e.g. DOIs cited in code but not in the library)."""
    resolver = Resolver(settings, **kw)
    report = EnrichReport()
    try:
        records = [r for r in library.all() if keys is None or r.key in keys]
        updates: list[PaperRecord] = []
        for rec in records:
            ref = next((f"{s}:{rec.ids[s]}" for s in ("doi", "arxiv", "openalex") if rec.ids.get(s)),
                       None)
            if ref is None:
                report.unchanged.append(rec.key)
                continue
            res = resolver.resolve(ref)
            if res.errors:
                report.errors[rec.key] = res.errors
            if res.record is not None:
                updates.append(res.record.model_copy(update={"key": rec.key}))
        for ref in add_refs or []:
            if library.get(ref):
                continue
            res = resolver.resolve(ref)
            if res.errors:
                report.errors[ref] = res.errors
            if res.record is not None:
                updates.append(res.record)
        if updates:
            imp = library.add(updates)
            report.added = imp.added
            report.enriched = [into for _, into in imp.merged]
            report.unchanged += imp.unchanged
    finally:
        resolver.close()
    return report
