"""The `eval` command: `codeteacher eval --questions Q --index DIR --out RUN_DIR [...]` runs (or
resumes) an evaluation; `codeteacher eval compare RUN ...` scores runs side by side.

`register(subparsers)` adds the command to the main CLI; each parser's `func` default takes the
parsed Namespace and returns an exit code (UserError propagates for the shell to print).
`main(argv)` runs the command on its own (`python -m codeteacher.evaluation.cli`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..contracts.errors import UserError
from ..contracts.progress import stage_progress


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", help="question file: {'questions': [{id, category, "
                   "question}]} or a list of such")
    p.add_argument("--references", help="reference answers: {'answers': [{id, answer}]}; "
                   "without them there is no coverage and no judge")
    p.add_argument("--index", help="index directory (built by 'codeteacher index')")
    p.add_argument("--out", help="run directory: answers.json, scores.json, report.md "
                   "(an existing one is resumed)")
    p.add_argument("--k", type=int, help="evidence items per answer (default: retrieval.k)")
    p.add_argument("--limit", type=int, help="ask at most this many new questions now")
    p.add_argument("--settings", default=argparse.SUPPRESS, help="settings file")


def register(subparsers) -> argparse.ArgumentParser:
    """Add `eval` (run by default, `run`, `compare`) to the main CLI's subparsers."""
    p = subparsers.add_parser(
        "eval", help="evaluate answers on a question set (run, resume, compare)",
        description="Ask every question of a question file through the same path as 'ask', "
        "save answers.json incrementally (rerun to resume), judge and score them, and write "
        "report.md and scores.json. 'eval compare' scores runs side by side.")
    _run_options(p)
    sub = p.add_subparsers(dest="eval_command", metavar="{run,compare}")
    r = sub.add_parser("run", help="run or resume an evaluation (the default)")
    _run_options(r)
    c = sub.add_parser("compare", help="score runs or answer files side by side",
                       description="Per-category scores of runs side by side. A RUN is a run "
                       "directory or an answers file (ours or the paper's schema).")
    c.add_argument("runs", nargs="+", metavar="RUN")
    c.add_argument("--references", help="reference answers (default: each run's own)")
    g = c.add_mutually_exclusive_group()
    g.add_argument("--corpus-files", help="restrict gold files to this corpus: a directory, "
                   "an index directory, or a text file with one path per line")
    g.add_argument("--index", dest="compare_index", metavar="DIR",
                   help="restrict gold files to the files of this index")
    c.add_argument("--json", help="also write all runs' scores to this JSON file")
    c.add_argument("--settings", default=argparse.SUPPRESS, help="settings file")
    for parser in (p, r, c):
        parser.set_defaults(func=command)
    return p


def _settings(args):
    from ..contracts.settings import Settings, load_settings

    value = getattr(args, "settings", None)
    return value if isinstance(value, Settings) else load_settings(value)


def command(args: argparse.Namespace) -> int:
    if getattr(args, "eval_command", None) == "compare":
        return compare_command(args)
    return run_command(args)


def run_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .report import compare_tables
    from .runner import run_eval

    missing = [f"--{n}" for n in ("questions", "index", "out") if not getattr(args, n, None)]
    if missing:
        raise UserError(f"eval: missing {', '.join(missing)} (or use 'eval compare RUN ...')")
    if args.limit is not None and args.limit < 0:
        raise UserError("eval: --limit must be 0 or more")
    if args.k is not None and args.k < 1:
        raise UserError("eval: --k must be 1 or more")
    settings = _settings(args)
    console = Console(stderr=True)
    with stage_progress() as progress:
        result = run_eval(args.questions, args.index, args.out, settings=settings,
                          references_path=args.references, k=args.k, limit=args.limit,
                          progress=progress)
    scores = result["scores"]
    console.print(f"asked {result['asked']}, kept {result['kept']} from before, "
                  f"{result['failed']} failed; {scores['answered']} of {scores['questions']} "
                  f"answered; report: {Path(args.out) / 'report.md'}")
    if result["judge_error"]:
        console.print(f"warning: judging failed: {result['judge_error']}")
    Console().print(compare_tables([scores])[0])
    return 0


def compare_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..contracts.jsonio import write_json
    from .io import corpus_files_from, index_files
    from .report import compare_tables
    from .scoring import compare_runs

    settings = _settings(args)
    cfg = settings.evaluation
    corpus = None
    if args.corpus_files:
        corpus = corpus_files_from(args.corpus_files)
    elif args.compare_index:
        corpus = index_files(args.compare_index)
    all_scores = compare_runs(args.runs, cfg, references_path=args.references,
                              corpus_files=corpus)
    console = Console()
    for table in compare_tables(all_scores):
        console.print(table)
    if args.json:
        write_json(Path(args.json), {"runs": all_scores})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codeteacher")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
