"""Plain functions over the paper library and links, for the CLI and for MCP tools to wrap.

They take explicit paths and settings, return JSON-ready dicts, and raise UserError for bad
input. `library=None` means the configured `papers.library`.
"""
from __future__ import annotations

from pathlib import Path

from ..contracts.errors import UserError
from ..contracts.jsonio import write_text
from .formats import load_file, to_bibtex
from .library import ImportReport, Library, to_jsonl


def _settings(settings):
    from ..contracts.settings import Settings

    return settings or Settings()


def library_path(library: str | Path | None = None, settings=None) -> Path:
    return Path(library or _settings(settings).papers.library)


def open_library(library=None, settings=None, create: bool = False) -> Library:
    s = _settings(settings)
    return Library.open(library_path(library, s), create=create, snapshot=s.papers.snapshot)


def import_files(files: list[str | Path], library=None, settings=None,
                 progress: bool = False) -> ImportReport:
    """Parse every file first, then add all records in ONE transaction (all or nothing); then
    (papers.embed_on_import) embed and store the vectors of new and changed records only."""
    if not files:
        raise UserError("give at least one file to import")
    records, problems = [], []
    for f in files:
        recs, probs = load_file(f)
        records += recs
        problems += probs
    s = _settings(settings)
    with open_library(library, s, create=True) as lib:
        report = lib.add(records)
        if s.papers.embed_on_import and (report.added or report.merged):
            from .linking import prepare

            report.embedded = prepare(lib, s, progress=progress)[2]
    report.problems = problems + report.problems
    return report


def search_papers(query: str, library=None, k: int = 10, settings=None) -> list[dict]:
    """Best-first library records matching `query` (words, or an identifier)."""
    if not query.strip():
        raise UserError("empty search query")
    with open_library(library, settings) as lib:
        hits = lib.search(query, k)
    return [{**rec.summary(), "score": (round(s, 3) if s != float("inf") else None)}
            for rec, s in hits]


def paper_details(ref: str, library=None, settings=None) -> dict:
    """The full record for a key, merged key, DOI, arXiv or OpenAlex id."""
    with open_library(library, settings) as lib:
        rec = lib.get(ref)
    if rec is None:
        raise UserError(f"no paper '{ref}' in the library")
    return rec.model_dump(mode="json")


def link_papers_to_code(index_dir: str | Path, target: str, library=None, k: int = 5,
                        settings=None) -> list[dict]:
    """Papers for a file or symbol of an index, best first, with score and reasons."""
    from .linking import link_target

    links = link_target(index_dir, target, library, k=k, settings=_settings(settings))
    return [{"key": l.key, "title": l.title, "year": l.year, "doi": l.doi, "url": l.url,
             "score": l.score, "signal": l.signal, "reasons": l.reasons,
             "attached_to": l.attached_to}
            for l in links]


def export_library(fmt: str, out: str | Path | None = None, library=None, settings=None) -> str:
    """The library as JSONL or BibTeX; written atomically to `out` when given."""
    with open_library(library, settings) as lib:
        records = lib.all()
    if fmt == "jsonl":
        text = to_jsonl(records)
    elif fmt == "bibtex":
        text = to_bibtex(records)
    else:
        raise UserError(f"unknown export format '{fmt}' (jsonl or bibtex)")
    if out:
        write_text(Path(out), text)
    return text
