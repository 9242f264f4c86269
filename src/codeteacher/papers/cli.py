"""`codeteacher papers ...`: import, search, show, link, export, build, enrich."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..contracts.errors import UserError
from . import api


def _settings(args):
    from ..contracts.settings import Settings, load_settings

    s = getattr(args, "settings", None)
    return s if isinstance(s, Settings) else load_settings(s)


def _console():
    from rich.console import Console

    # piped output has no terminal width: keep rows readable instead of folding at 80 columns
    return Console(soft_wrap=False, width=None if sys.stdout.isatty() else 200)


def _print_json(data) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def cmd_import(args) -> int:
    s = _settings(args)
    report = api.import_files(args.files, args.library, s, progress=not args.json)
    for p in report.problems:
        print(f"warning: {p}", file=sys.stderr)
    path = api.library_path(args.library, s)
    if args.json:
        _print_json({**report.as_dict(), "library": str(path)})
    else:
        print(f"{path}: {len(report.added)} added, {len(report.merged)} merged, "
              f"{len(report.unchanged)} unchanged, {len(report.problems)} problems, "
              f"{report.embedded} embedded")
    return 0


def cmd_search(args) -> int:
    hits = api.search_papers(args.query, args.library, args.k, _settings(args))
    if args.json:
        _print_json(hits)
        return 0
    if not hits:
        print("no matching papers")
        return 0
    from rich.table import Table

    t = Table("key", "year", "title", "first author", "doi / arXiv")
    t.columns[0].no_wrap = True
    for h in hits:
        t.add_row(h["key"], str(h["year"] or ""), h["title"], h["first_author"],
                  h["doi"] or (f"arXiv:{h['arxiv']}" if h["arxiv"] else ""))
    _console().print(t)
    return 0


def cmd_show(args) -> int:
    rec = api.paper_details(args.id, args.library, _settings(args))
    if args.json:
        _print_json(rec)
        return 0
    from rich.table import Table

    t = Table(show_header=False, box=None)
    t.add_column(style="bold")
    t.add_column()
    for field in ("key", "title", "authors", "year", "venue", "ids", "url", "keywords",
                  "citation_count", "abstract", "aliases", "sources"):
        v = rec.get(field)
        if v in (None, "", [], {}):
            continue
        if isinstance(v, list):
            v = "; ".join(map(str, v))
        elif isinstance(v, dict):
            v = ", ".join(f"{k}: {x}" for k, x in v.items())
        t.add_row(field, str(v))
    _console().print(t)
    return 0


def cmd_link(args) -> int:
    links = api.link_papers_to_code(args.index, args.target, args.library, args.k,
                                    _settings(args))
    if args.json:
        _print_json([{k: l[k] for k in ("key", "title", "year", "doi", "score", "signal",
                                        "reasons")} for l in links])
        return 0
    if not links:
        print(f"no papers linked to {args.target}")
        return 0
    from rich.table import Table

    t = Table("score", "key", "year", "title", "linked by", "why")
    t.columns[1].no_wrap = True
    for l in links:
        t.add_row(f"{l['score']:.2f}", l["key"], str(l["year"] or ""), l["title"], l["signal"],
                  "\n".join(l["reasons"]))
    _console().print(t)
    return 0


def cmd_export(args) -> int:
    text = api.export_library(args.format, args.output, args.library, _settings(args))
    if not args.output:
        sys.stdout.write(text)
    return 0


def cmd_build(args) -> int:
    from .linking import build_paper_links

    s = _settings(args)
    report = build_paper_links(args.index, api.library_path(args.library, s), s,
                               progress=not args.json)
    if args.json:
        _print_json(report.model_dump())
        return 0
    print(f"{report.output}: {report.entities_linked} of {report.entities_considered} entities "
          f"linked ({report.links} links, {report.papers_in_library} papers); citations "
          f"{report.citations_resolved}/{report.citations_found} resolved "
          f"in {report.seconds:.1f}s")
    for u in report.unresolved_citations[:20]:
        print(f"  unresolved: {u}")
    return 0


def cmd_enrich(args) -> int:
    from .citations import RecordIndex
    from .linking import gather_citations, read_records
    from .online import enrich_library

    s = _settings(args)
    with api.open_library(args.library, s) as lib:
        refs = []
        if args.index:
            cites, _ = gather_citations(read_records(Path(args.index)), RecordIndex(lib.all()), None)
            refs = sorted({f"{c.kind}:{c.value}" for c in cites
                           if not c.resolved and c.kind in ("doi", "arxiv")})
        report = enrich_library(lib, s.papers.online, keys=args.keys or None, add_refs=refs)
    if args.json:
        _print_json(report.model_dump())
        return 0
    print(f"{len(report.enriched)} enriched, {len(report.added)} added, "
          f"{len(report.errors)} with errors")
    for ref, errs in report.errors.items():
        for src, msg in errs.items():
            print(f"  {ref}: {src}: {msg}")
    return 0


def register(subparsers) -> argparse.ArgumentParser:
    """Add `papers` and its subcommands to an argparse subparsers object."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--library", help="paper library file (default: papers.library setting)")
    common.add_argument("--settings", help="runtime_settings.json to use")
    p = subparsers.add_parser("papers", help="paper library and code-to-paper links")
    sub = p.add_subparsers(dest="papers_command", required=True)

    q = sub.add_parser("import", parents=[common], help="import BibTeX / CSL-JSON / JSONL / CFF")
    q.add_argument("files", nargs="+", metavar="FILE")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_import)

    q = sub.add_parser("search", parents=[common], help="full-text search of the library")
    q.add_argument("query")
    q.add_argument("-k", type=int, default=10)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_search)

    q = sub.add_parser("show", parents=[common], help="one record by key, DOI, arXiv or OpenAlex id")
    q.add_argument("id")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_show)

    q = sub.add_parser("link", parents=[common], help="papers for a file or symbol of an index")
    q.add_argument("target", metavar="PATH_OR_SYMBOL")
    q.add_argument("--index", required=True)
    q.add_argument("-k", type=int, default=5)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_link)

    q = sub.add_parser("export", parents=[common], help="write the library as JSONL or BibTeX")
    q.add_argument("--format", choices=("jsonl", "bibtex"), required=True)
    q.add_argument("-o", "--output")
    q.set_defaults(func=cmd_export)

    q = sub.add_parser("build", parents=[common], help="build paper_links.json for an index")
    q.add_argument("--index", required=True)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_build)

    q = sub.add_parser("enrich", parents=[common], help="fill records from OpenAlex/Crossref/"
                       "arXiv (needs papers.online.enabled)")
    q.add_argument("keys", nargs="*", help="only these records")
    q.add_argument("--index", help="also add works whose DOI/arXiv id the index's code cites")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_enrich)
    return p


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (tests, debugging); the main CLI wires `register` itself."""
    parser = argparse.ArgumentParser(prog="codeteacher")
    register(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
