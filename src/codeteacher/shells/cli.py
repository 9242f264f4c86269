"""Command-line shells: `codeteacher` (admin) and `ask`. Rendering happens here only."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..contracts.errors import UserError

# The sample app and its demo questions ship inside the package, so `pip install .` can run the demo.
DEMO_FILE = Path(__file__).resolve().parents[1] / "demo" / "demo.json"


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _settings(args):
    from ..contracts.settings import load_settings
    from ..contracts.settings.sources import require_opt_in

    settings = load_settings(getattr(args, "settings", None))
    if hasattr(args, "allow_remote"):  # commands that may run a model: code must not leave
        require_opt_in(settings, args.allow_remote, source=settings.source)  # unasked
    return settings


def _add_allow_remote(p) -> None:
    p.add_argument("--allow-remote", action="store_true", help="allow settings that send code "
                   "or secrets to another host (a non-loopback base_url, online paper sources)")


# ---- index / demo ------------------------------------------------------------------------------

def _render_build(report) -> None:
    from rich.table import Table

    con = _console()
    if report.up_to_date:
        con.print(f"index '{report.name}' → {report.out}: up to date ({report.files} files "
                  f"unchanged, {report.reused_vectors} records kept; "
                  f"{sum(report.stage_seconds.values()):.2f} s)")
        _render_partial(con, report)
        return
    t = Table(title=f"index '{report.name}' → {report.out}", show_lines=False)
    t.add_column("what")
    t.add_column("count / seconds", justify="right")
    t.add_row("files", str(report.files))
    for reason, n in sorted(report.skipped.items()):
        t.add_row(f"  skipped: {reason}", str(n))
    t.add_row("files parsed / reused", f"{report.parsed} / {report.reused_files}")
    if report.partial_files:
        t.add_row("files parsed in part", str(len(report.partial_files)))
    for kind, n in sorted(report.chunks_by_kind.items(), key=lambda kv: -kv[1]):
        t.add_row(f"chunks: {kind}", str(n))
    for typ, n in sorted(report.edges_by_type.items()):
        t.add_row(f"edges: {typ}", str(n))
    t.add_row("unresolved calls / includes",
              f"{report.unresolved_calls} / {report.unresolved_includes}")
    t.add_row("vectors embedded / reused", f"{report.embedded} / {report.reused_vectors}")
    for k, v in report.explanations.items():
        if isinstance(v, (int, float)):
            t.add_row(f"explanations: {k}", str(v))
    for stage, sec in report.stage_seconds.items():
        t.add_row(f"seconds: {stage}", f"{sec:.2f}")
    t.add_row("seconds: total", f"{sum(report.stage_seconds.values()):.2f}")
    con.print(t)
    _render_partial(con, report)


def _render_partial(con, report, shown: int = 10) -> None:
    """Files the parser failed on in part: never hidden in a successful build's table."""
    if not report.partial_files:
        return
    con.print(f"warning: {len(report.partial_files)} file(s) parsed only in part "
              "(their other chunks are indexed):", markup=False)
    for path, what in list(report.partial_files.items())[:shown]:
        con.print(f"  {path}: {what}", markup=False)
    if len(report.partial_files) > shown:
        con.print(f"  ... and {len(report.partial_files) - shown} more (--json lists all)")


def cmd_index(args) -> int:
    from ..ingest.build import build_index

    settings = _settings(args)
    if args.watch is not None and args.watch <= 0:
        raise UserError("--watch needs a positive number of seconds")

    report = build_index(args.path, out=args.out, name=args.name, settings=settings,
                         progress=not args.quiet, include=args.include, exclude=args.exclude)
    if args.json:
        print(report.model_dump_json(indent=None if args.watch else 1), flush=True)
    else:
        _render_build(report)
    if args.watch is None:
        return 0
    # Watch mode: one process keeps the models loaded, so an edit costs only the incremental
    # rebuild; an unchanged tree costs a directory walk (build_index's up-to-date check).
    import time

    say = _console(stderr=args.json).print  # with --json, stdout holds only the reports
    say(f"watching {args.path} every {args.watch:g} s (Ctrl-C stops)")
    try:
        while True:
            time.sleep(args.watch)
            start = time.perf_counter()
            report = build_index(args.path, out=args.out, name=args.name, settings=settings,
                                 include=args.include, exclude=args.exclude)
            if not report.up_to_date:
                if args.json:
                    print(report.model_dump_json(), flush=True)
                else:
                    say(f"{time.strftime('%H:%M:%S')} updated: {report.parsed} file(s) parsed, "
                        f"{report.embedded} vector(s) embedded in "
                        f"{time.perf_counter() - start:.2f} s")
    except KeyboardInterrupt:
        _interrupt_handled()
        say("stopped watching; the index is complete")
    return 0


def cmd_demo(args) -> int:
    from ..api import Engine
    from ..ingest.build import build_index

    if not DEMO_FILE.is_file():
        raise UserError(f"demo definition not found: {DEMO_FILE}")
    demo = json.loads(DEMO_FILE.read_text())
    repo = DEMO_FILE.parent / demo["repo"]
    out = Path(args.out or Path("embeddings") / demo["name"])
    settings = _settings(args)
    if demo.get("papers"):  # recorded in the index, so `serve` finds the demo's library
        library = (out.parent / f"{demo['name']}-papers.sqlite").absolute()
        settings = settings.model_copy(update={"papers": settings.papers.model_copy(
            update={"library": str(library)})})
    report = build_index(repo, out=out, name=demo["name"], settings=settings, progress=True)
    _render_build(report)
    if demo.get("papers"):
        # The sample app ships its reference list: a local library, then code-paper links.
        from ..papers.api import import_files
        from ..papers.linking import build_paper_links

        import_files([str(DEMO_FILE.parent / demo["papers"])], library=str(library),
                     settings=settings)
        links = build_paper_links(out, library, settings)
        print(f"paper links: {links.entities_linked} entities linked to {links.papers_in_library}"
              f" papers ({links.citations_resolved}/{links.citations_found} citations resolved)")
    engine = Engine.load(out, settings)
    for q in demo["questions"][: args.questions]:
        _ask_and_print(engine, q, stream=sys.stdout.isatty())
    print(f"\nindex: {out}   try: ask \"...\" --index {out}")
    return 0


# ---- ask -------------------------------------------------------------------------------------------

class _StreamWriter:
    """Writes streamed answer text word-wrapped to the terminal width as it arrives."""

    def __init__(self, width: int, start_col: int):
        self.width, self.col, self.word, self.used = width, start_col, "", False

    def __call__(self, text: str) -> None:
        if not self.used:
            sys.stdout.write("Answer:")
            self.used = True
        for ch in text:
            if ch.isspace():
                self._flush()
                if ch == "\n":
                    sys.stdout.write("\n")
                    self.col = 0
            else:
                self.word += ch
        sys.stdout.flush()

    def _flush(self) -> None:
        if not self.word:
            return
        if self.col and self.col + 1 + len(self.word) > self.width:
            sys.stdout.write("\n")
            self.col = 0
        elif self.col:
            sys.stdout.write(" ")
            self.col += 1
        sys.stdout.write(self.word)
        self.col += len(self.word)
        self.word = ""

    def close(self) -> None:
        self._flush()
        sys.stdout.write("\n")
        sys.stdout.flush()


def _answered_by(result) -> str:
    if result.answer_source == "llm":
        return f"answered by {result.model.split(':', 1)[-1]} ({result.backend})"
    if result.answer_source == "fallback":
        return f"answered from the index without a model: {result.answer_note}"
    return "answered from the index (extractive; no answer model configured)"


def _ask_and_print(engine, question: str, k=None, trace=None, verbose: bool = False,
                   stream: bool = True):
    """Ask and print; an LLM answer is shown word by word as the model writes it."""
    from rich.text import Text

    con = _console()
    con.print(Text.assemble(("Q:", "bold"), " ", question))
    writer = None
    if stream:
        writer = _StreamWriter(max(40, min(con.width or 80, 100)), len("Answer:"))
    result = engine.ask(question, k=k, trace=trace, on_text=writer)
    streamed = writer is not None and writer.used
    if streamed:
        writer.close()
    # A streamed answer the engine then replaced (the model abstained) is printed again whole.
    shown = streamed and result.answer_source == "llm"
    _print_answer(result, trace, question=False, answer=not shown, verbose=verbose)
    return result


def _print_answer(result, explain_trace=None, question: bool = True, answer: bool = True,
                  verbose: bool = False) -> None:
    from rich.text import Text

    con = _console()
    # On a terminal, wrap at word boundaries (readable in 80 columns); piped output keeps one
    # line per answer and per evidence item, for scripts.
    soft = not sys.stdout.isatty()
    # Questions and answers quote code (`data[i]`, `[[nodiscard]]`): never read them as markup.
    if question:
        con.print(Text.assemble(("Q:", "bold"), " ", result.question))
    if answer:
        con.print(Text.assemble(("Answer:", "bold"), " ", result.answer), soft_wrap=soft)
    con.print(Text(_answered_by(result), style="dim"))
    if result.unsupported_names:
        con.print(Text("note: names in the answer that the context does not hold: "
                       + ", ".join(result.unsupported_names), style="yellow"))
    if verbose:
        t = result.timings_ms
        first = f"first token {result.ttft_ms / 1000:.2f} s, " if result.ttft_ms else ""
        conf = f", confidence {result.confidence:.2f}" if result.confidence is not None else ""
        con.print(Text(f"{first}answer {t.get('answer', 0) / 1000:.2f} s, total "
                       f"{t.get('total', 0) / 1000:.2f} s, tokens {result.tokens_in} in / "
                       f"{result.tokens_out} out{conf}", style="dim"))
    con.print(Text("Evidence:", style="bold"))
    for e in result.evidence:
        con.print(Text(f"- {e.path}:{e.start_line}-{e.end_line} — {e.symbol} — "
                       f"{e.description}"), soft_wrap=soft)
    if result.papers:
        con.print("[bold]Papers:[/bold]")
        for p in result.papers:
            ref = p.doi and f"doi:{p.doi}" or p.url or ""
            con.print(f"- {p.title} ({p.year}) {ref}", markup=False)
    if explain_trace is not None:
        from .trace_view import render_trace

        render_trace(con, explain_trace, result)
    con.print()


def _default_index() -> str:
    env = os.environ.get("CODETEACHER_INDEX")
    if env:
        return env
    root = Path("embeddings")
    found = [p.parent for p in root.glob("*/manifest.json")] if root.is_dir() else []
    if len(found) == 1:
        return str(found[0])
    raise UserError("no --index given (set CODETEACHER_INDEX, or build one with "
                    "`codeteacher index PATH`)")


def _process_age_ms() -> float | None:
    """Milliseconds since this process started (interpreter start-up and imports included):
    Linux's /proc, 10 ms resolution; None elsewhere."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            started = int(fh.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        return round((uptime - started / os.sysconf("SC_CLK_TCK")) * 1000, 1)
    except (OSError, ValueError, IndexError):
        return None


def cmd_ask(args) -> int:
    from ..api import Engine
    from ..retrieval.search import Trace

    startup = _process_age_ms()  # before any work: interpreter start-up and imports

    if not args.question and not args.questions:
        raise UserError("give a QUESTION or --questions FILE")
    questions = None
    if args.questions:  # the one question-file reader, shared with `codeteacher eval`
        from ..evaluation.io import QuestionFile

        questions = QuestionFile.load(args.questions).questions
    engine = Engine.load(args.index or _default_index(), _settings(args))
    if questions is not None:
        for q in questions:
            res = engine.ask(q.question, k=args.k)
            print(json.dumps({"id": q.id, **res.to_json_dict()}, ensure_ascii=False))
            sys.stdout.flush()
        return 0
    question = " ".join(args.question)
    trace = Trace() if args.explain else None
    if args.json:
        result = engine.ask(question, k=args.k, trace=trace)
        if startup is not None:  # start-up (interpreter, imports) is part of what a user waits
            result.timings_ms["startup"] = startup
            result.timings_ms["process"] = _process_age_ms() or 0.0
        print(json.dumps(result.to_json_dict(), ensure_ascii=False, indent=1))
    else:
        _ask_and_print(engine, question, args.k, trace, verbose=args.verbose,
                       stream=sys.stdout.isatty() or args.verbose)
    return 0


def _add_ask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", nargs="*", help="the question")
    p.add_argument("--index", help="index folder (default: $CODETEACHER_INDEX or the only "
                   "index under ./embeddings)")
    p.add_argument("-k", type=int, default=None, help="evidence items")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--questions", help="batch mode: a question file "
                   '({"questions": [{"id", "question"}]}); prints JSON lines')
    p.add_argument("--explain", action="store_true", help="print the retrieval trace")
    p.add_argument("-v", "--verbose", action="store_true", help="also print time to first "
                   "token, latency, tokens and confidence")
    p.add_argument("--settings", help="runtime_settings.json to use")
    _add_allow_remote(p)
    p.set_defaults(func=cmd_ask)


# ---- stages ------------------------------------------------------------------------------------

def cmd_stage(args) -> int:
    s = _settings(args)
    P = Path
    if args.stage in ("explain", "merge-explanations"):
        return _stage_explain(args, s)
    # (imported here: the explain stages run on GPU nodes that need no FAISS or tree-sitter)
    from ..ingest import stages as st

    if args.stage == "collect":
        st.stage_collect(P(args.repo), P(args.out), s, include=args.include, exclude=args.exclude)
    elif args.stage == "parse":
        st.stage_parse(P(args.files), P(args.out), s, cache=_cache(args.cache))
    elif args.stage == "graph":
        st.stage_graph(P(args.files), P(args.chunks), P(args.out))
    elif args.stage == "entities":
        st.stage_entities(P(args.files), P(args.chunks), P(args.structure), P(args.out))
    elif args.stage == "embed":
        st.stage_embed(P(args.chunks), P(args.entities), P(args.out), s,
                       explanations_path=P(args.explanations) if args.explanations else None,
                       cache=_cache(args.cache))
    elif args.stage == "index":
        from ..ingest.build import assemble_index

        assemble_index(P(args.work), P(args.out), s, args.name)
    return 0


def _stage_explain(args, s) -> int:
    from ..ingest.explain import explain_stage, merge_explanations

    P = Path
    if args.stage == "explain":
        report = explain_stage(P(args.chunks), P(args.entities), P(args.structure), P(args.out),
                               s, shard=args.shard, of=args.of,
                               cache=_cache(args.cache, "explanations.jsonl"))
    else:
        report = merge_explanations([P(x) for x in args.shards], P(args.out), s,
                                    chunks=P(args.chunks) if args.chunks else None,
                                    entities=P(args.entities) if args.entities else None,
                                    structure=P(args.structure) if args.structure else None,
                                    cache=_cache(args.cache, "explanations.jsonl"))
    print(report.model_dump_json(), file=sys.stderr)
    return 0


def _cache(path: str | None, file: str | None = None):
    if not path:
        return None
    p = Path(path)
    if file:
        return p / file if p.is_dir() else p
    return p if p.is_dir() else None


def _add_stage_parser(sub) -> None:
    p = sub.add_parser("stage", help="run one pipeline stage (used by the Snakemake workflow)")
    ss = p.add_subparsers(dest="stage", required=True)

    def mk(name, help_):
        q = ss.add_parser(name, help=help_)
        q.add_argument("--settings")
        q.add_argument("--out", required=True)
        q.set_defaults(func=cmd_stage)
        return q

    q = mk("collect", "walk a repository → files.json")
    q.add_argument("repo")
    q.add_argument("--include", action="append")
    q.add_argument("--exclude", action="append")
    q = mk("parse", "files.json → chunks.jsonl (+ file_facts.json)")
    q.add_argument("--files", required=True)
    q.add_argument("--cache")
    q = mk("graph", "chunks → project_structure.json")
    q.add_argument("--files", required=True)
    q.add_argument("--chunks", required=True)
    q = mk("entities", "file/module/call-chain entities → entities.jsonl")
    for a in ("--files", "--chunks", "--structure"):
        q.add_argument(a, required=True)
    q = mk("explain", "LLM explanations of one shard → shard .jsonl")
    for a in ("--chunks", "--entities", "--structure"):
        q.add_argument(a, required=True)
    q.add_argument("--shard", type=int, default=0)
    q.add_argument("--of", type=int, default=1)
    q.add_argument("--cache")
    q = mk("merge-explanations", "join explanation shards → explanations.jsonl")
    q.add_argument("shards", nargs="+")
    for a in ("--chunks", "--entities", "--structure", "--cache"):
        q.add_argument(a)
    q = mk("embed", "records + vectors → OUT folder")
    q.add_argument("--chunks", required=True)
    q.add_argument("--entities", required=True)
    q.add_argument("--explanations")
    q.add_argument("--cache")
    q = mk("index", "stage files in WORK → index folder OUT (atomic)")
    q.add_argument("--work", required=True)
    q.add_argument("--name")


# ---- main ----------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codeteacher", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("index", help="build or update an index of a repository")
    p.add_argument("path")
    p.add_argument("--name")
    p.add_argument("--out", help="index folder (default embeddings/<name>)")
    p.add_argument("--include", action="append", help="only paths matching (gitignore glob)")
    p.add_argument("--exclude", action="append", help="also exclude (gitignore glob)")
    p.add_argument("--settings")
    p.add_argument("--json", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("--watch", type=float, metavar="SECONDS",
                   help="keep running: check the repository every SECONDS and update the index "
                        "when files change (models stay loaded; Ctrl-C stops)")
    _add_allow_remote(p)
    p.set_defaults(func=cmd_index)
    p = sub.add_parser("demo", help="index the bundled sample app and answer a question")
    p.add_argument("--out")
    p.add_argument("--settings")
    p.add_argument("--questions", type=int, default=2)
    _add_allow_remote(p)
    p.set_defaults(func=cmd_demo)
    _add_ask_args(sub.add_parser("ask", help="ask a question (same as the `ask` command)"))
    _add_stage_parser(sub)
    # Our own modules: a broken import must fail loudly, never drop a subcommand.
    from ..evaluation import cli as eval_cli
    from ..generation import cli as models_cli
    from ..papers import cli as papers_cli
    from . import serve

    for mod in (serve, eval_cli, papers_cli, models_cli):
        mod.register(sub)
    return parser


def _interrupt_handled() -> None:
    """Tell CPython that the Ctrl-C was handled. A KeyboardInterrupt that lands inside exec()
    of a string (namedtuple and dataclasses do that at import, so while models load) sets the
    interpreter's "unhandled KeyboardInterrupt" flag even when we catch it later; under
    `python -m` the interpreter then kills itself with SIGINT at exit instead of returning our
    exit code. Every top-level eval of a string clears that flag first, so one empty exec does."""
    exec("pass")  # noqa: S102 - a constant string; see the docstring


def run(argv: list[str] | None, parser: argparse.ArgumentParser) -> int:
    debug = bool(os.environ.get("CODETEACHER_DEBUG"))
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        _interrupt_handled()
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the shell's last line of defence
        if debug:
            raise
        print(f"error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
              "(set CODETEACHER_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    return run(argv, build_parser())


def ask_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ask", description="Ask a question about an indexed "
                                     "codebase; prints an Answer and its Evidence.")
    _add_ask_args(parser)
    return run(argv, parser)


if __name__ == "__main__":
    sys.exit(main())
