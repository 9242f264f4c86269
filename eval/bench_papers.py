"""Benchmark of code-to-paper links (not a test): hit@1 / hit@3 and link latency on an index,
for one or more paper libraries side by side (e.g. the shared 60 papers, and the same 60 mixed
into thousands of others).

The entities (`eval/papers_entities.json`, IPPL files with the papers that apply to each) were
chosen before the first run. hit@k: one of the top k is a gold paper; "lenient" also counts
another edition of a gold work (a record with the same normalised title).

Per library: `prepare` is the one-off work after a library change (link state, vectors of
records without one, the ANN index); `cold` is a fresh `codeteacher papers link` process per
call (imports, reading the prepared state, one link); `warm` is a call in a process that has
linked before (what the MCP server and `ask` see).

    .venv/bin/python eval/bench_papers.py --index IX --library small.sqlite big.sqlite \
        [--entities eval/papers_entities.json] [--cold 3] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_library(index: Path, library: Path, entities: list[dict], n_cold: int,
                papers_settings: dict | None = None) -> dict:
    from codeteacher.contracts.settings import Settings
    from codeteacher.papers.identity import normalize_title
    from codeteacher.papers.library import Library
    from codeteacher.papers.linking import link_target, open_linker

    settings = Settings.model_validate({"papers": papers_settings or {}})
    t0 = time.perf_counter()
    linker = open_linker(library, settings, progress=True)
    t_prep = time.perf_counter() - t0
    with Library.open(library, snapshot=False) as lib:
        n_papers = len(lib)
    cold = []
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for e in entities[:n_cold]:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "codeteacher.shells.cli", "papers", "link",
                        e["target"], "--index", str(index), "--library", str(library), "--json",
                        "-k", "3"], check=True, capture_output=True, env=env)
        cold.append(time.perf_counter() - t)
    link_target(index, entities[0]["target"], library, k=3, settings=settings)  # warm up
    rows, warm = [], []
    for e in entities:
        t = time.perf_counter()
        links = link_target(index, e["target"], library, k=3, settings=settings)
        warm.append(time.perf_counter() - t)
        gold = set(e["gold"])
        gold_titles = {normalize_title(linker.index.record(g).title)
                       for g in gold if g in linker.key_to_i}
        keys = [l.key for l in links]
        same = [normalize_title(linker.index.record(k).title) in gold_titles for k in keys]
        rows.append({"target": e["target"], "top3": [(l.key, l.score, l.signal) for l in links],
                     "hit1": bool(keys) and keys[0] in gold, "hit3": bool(set(keys) & gold),
                     "lenient1": bool(same) and same[0], "lenient3": any(same)})
    n = len(rows)
    return {"library": str(library), "papers": n_papers, "prepare_s": round(t_prep, 2),
            "hit@1": sum(r["hit1"] for r in rows) / n, "hit@3": sum(r["hit3"] for r in rows) / n,
            "lenient_hit@1": sum(r["lenient1"] for r in rows) / n,
            "lenient_hit@3": sum(r["lenient3"] for r in rows) / n,
            "warm_p50_ms": round(1000 * statistics.median(warm), 1),
            "warm_max_ms": round(1000 * max(warm), 1),
            "cold_p50_s": round(statistics.median(cold), 2) if cold else None,
            "cold_max_s": round(max(cold), 2) if cold else None, "entities": n, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True, help="an index of the corpus (IPPL)")
    ap.add_argument("--library", nargs="+", required=True, help="paper libraries to compare")
    ap.add_argument("--entities", default=str(REPO / "eval" / "papers_entities.json"))
    ap.add_argument("--cold", type=int, default=3, help="fresh-process calls per library")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--papers-settings", default="{}", help="JSON overrides of the papers "
                    "settings for the warm runs (cold runs use the defaults)")
    ap.add_argument("-v", "--verbose", action="store_true", help="top 3 of every entity")
    args = ap.parse_args(argv)
    entities = json.loads(Path(args.entities).read_text(encoding="utf-8"))["entities"]
    over = json.loads(args.papers_settings)
    results = [run_library(Path(args.index), Path(lib), entities, args.cold, over)
               for lib in args.library]
    print("| library | papers | hit@1 | hit@3 | lenient hit@1 / hit@3 | warm p50 (max) | "
          "cold p50 (max) | prepare |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {Path(r['library']).name} | {r['papers']} | {r['hit@1']:.2f} | {r['hit@3']:.2f}"
              f" | {r['lenient_hit@1']:.2f} / {r['lenient_hit@3']:.2f} | {r['warm_p50_ms']:.0f} ms"
              f" ({r['warm_max_ms']:.0f}) | {r['cold_p50_s']} s ({r['cold_max_s']}) | "
              f"{r['prepare_s']} s |")
    if args.verbose:
        for r in results:
            print(f"\n{r['library']}")
            for row in r["rows"]:
                print(f"  {'+' if row['hit3'] else '-'} {row['target']}: "
                      + ", ".join(f"{k} ({s:.2f}, {sig})" for k, s, sig in row["top3"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
