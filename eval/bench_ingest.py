"""Ingest benchmark: full index build (seconds per stage), index size, re-ingest after editing
one header, warm query latency and evidence-file recall.

    .venv/bin/python eval/bench_ingest.py --repo /path/to/ippl \
        --questions ../shared/benchmarks/ippl/questions_v2.json \
        --references ../shared/benchmarks/ippl/reference_answers_v2.json

The repository is copied to a scratch folder first (the edit must not touch the original).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from codeteacher.api import Engine
from codeteacher.contracts.settings import load_settings
from codeteacher.ingest.build import build_index

sys.path.insert(0, str(Path(__file__).parent))
from bench_retrieval import evaluate  # noqa: E402


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--questions")
    ap.add_argument("--references")
    ap.add_argument("--settings")
    ap.add_argument("--header", help="header to edit (default: the first .h file)")
    args = ap.parse_args()
    settings = load_settings(args.settings)
    con = Console()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(args.repo, repo, symlinks=True)
        out = Path(tmp) / "index"
        t0 = time.perf_counter()
        full = build_index(repo, out=out, settings=settings)
        full_s = time.perf_counter() - t0
        size = du(out)
        t0 = time.perf_counter()
        same = build_index(repo, out=out, settings=settings)
        same_s = time.perf_counter() - t0
        header = repo / args.header if args.header else sorted(repo.rglob("*.h"))[0]
        header.write_text(header.read_text() + "\n// edited by the benchmark\n")
        t0 = time.perf_counter()
        edit = build_index(repo, out=out, settings=settings)
        edit_s = time.perf_counter() - t0
        table = Table(title=f"ingest of {args.repo}")
        table.add_column("measure")
        table.add_column("value", justify="right")
        table.add_row("files / records", f"{full.files} / {sum(full.chunks_by_kind.values())}")
        for stage, sec in full.stage_seconds.items():
            table.add_row(f"full ingest: {stage} s", f"{sec:.2f}")
        table.add_row("full ingest: total s (wall, incl. model load)", f"{full_s:.1f}")
        table.add_row("index size MiB", f"{size / 2**20:.1f}")
        table.add_row("rebuild, nothing changed: s / embedded", f"{same_s:.2f} / {same.embedded}")
        table.add_row(f"re-ingest after editing {header.relative_to(repo)}: s / parsed / "
                      "embedded", f"{edit_s:.2f} / {edit.parsed} / {edit.embedded}")
        if args.questions and args.references:
            questions = json.loads(Path(args.questions).read_text())["questions"]
            refs = {a["id"]: a["answer"]
                    for a in json.loads(Path(args.references).read_text())["answers"]}
            engine = Engine.load(out, settings)
            engine.warm_up()
            r = evaluate(engine, questions, refs)
            r = evaluate(engine, questions, refs)  # second pass: query vectors cached? no -
            table.add_row("warm query p50 / p95 ms", f"{r['p50_ms']} / {r['p95_ms']}")
            a = r["recall"]["ALL"]
            table.add_row(f"evidence-file recall@5 / @10 (n={a['n']})",
                          f"{a['r@5']:.3f} / {a['r@10']:.3f}")
        con.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
