"""Retrieval benchmark: evidence-file recall@5/@10 per category, warm query latency, and an
ablation of the online retrieval parts (each switched off in turn).

    .venv/bin/python eval/bench_retrieval.py --index embeddings/ippl \
        --questions ../shared/benchmarks/ippl/questions_v2.json \
        --references ../shared/benchmarks/ippl/reference_answers_v2.json [--ablation] [--json OUT]

Gold files follow the evaluation rule (codeteacher.evaluation.metrics.gold_files): the file
names in the reference answer, else in the question, kept where the corpus has such a file.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path, PurePosixPath

from rich.console import Console
from rich.table import Table

from codeteacher.api import Engine
from codeteacher.contracts.settings import load_settings
from codeteacher.evaluation.metrics import corpus_name_map, gold_files, recall_at_k

# Each ablation switches one part of the online stage off (settings path -> value).
ABLATIONS = {
    "full": {},
    "no routing": {"routing.enabled": False},
    "no rerank": {"rerank.enabled": False},
    "no expansion": {"expansion.enabled": False},
    "no context filter": {"context_filter.enabled": False},
    "foundation only": {"routing.enabled": False, "rerank.enabled": False,
                        "expansion.enabled": False, "context_filter.enabled": False},
}


def with_overrides(settings, overrides: dict):
    data = settings.model_dump()
    for dotted, value in overrides.items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return type(settings).model_validate(data)


def evaluate(engine: Engine, questions, refs, k_max: int = 10) -> dict:
    corpus = corpus_name_map(engine.store.manifest.files)
    per_cat: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies, misses = [], []
    for q in questions:
        t0 = time.perf_counter()
        hits = engine.search(q["question"], k=k_max)
        latencies.append((time.perf_counter() - t0) * 1000)
        gold, _ = gold_files(refs.get(q["id"], ""), q["question"], corpus)
        if not gold:
            continue
        items = [[PurePosixPath(h.chunk.path).name] for h in hits]
        for k in (5, 10):
            r = recall_at_k(gold, items, k)
            per_cat[q["category"]][f"r@{k}"].append(r)
            per_cat["ALL"][f"r@{k}"].append(r)
        if recall_at_k(gold, items, 5) < 1:
            misses.append((q["id"], gold, [i[0] for i in items[:5]]))
    lat = sorted(latencies)
    return {
        "recall": {c: {m: round(statistics.mean(v), 3) for m, v in d.items()} | {"n": len(d["r@5"])}
                   for c, d in per_cat.items()},
        "p50_ms": round(lat[len(lat) // 2], 1), "p95_ms": round(lat[int(len(lat) * 0.95) - 1], 1),
        "misses": misses,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--references", required=True)
    ap.add_argument("--settings")
    ap.add_argument("--ablation", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    questions = json.loads(Path(args.questions).read_text())["questions"]
    refs = {a["id"]: a["answer"] for a in json.loads(Path(args.references).read_text())["answers"]}
    base = load_settings(args.settings)
    con = Console()
    runs = ABLATIONS if args.ablation else {"full": {}}
    results = {}
    engine = Engine.load(args.index, base)
    engine.search("warm up the models")
    for label, overrides in runs.items():
        engine.settings = with_overrides(base, overrides)
        engine.search("warm up")
        results[label] = evaluate(engine, questions, refs)
    cats = sorted({c for r in results.values() for c in r["recall"]}, key=lambda c: (c == "ALL", c))
    table = Table(title=f"evidence-file recall@5 / @10 — {args.index}")
    table.add_column("category")
    table.add_column("n", justify="right")
    for label in results:
        table.add_column(label, justify="right")
    for c in cats:
        first = next(iter(results.values()))["recall"].get(c, {})
        row = [c, str(first.get("n", 0))]
        for r in results.values():
            m = r["recall"].get(c)
            row.append(f"{m['r@5']:.2f} / {m['r@10']:.2f}" if m else "-")
        table.add_row(*row)
    table.add_row("latency p50 / p95 ms", "",
                  *[f"{r['p50_ms']} / {r['p95_ms']}" for r in results.values()])
    con.print(table)
    if args.show_misses:
        for qid, gold, got in results["full"]["misses"]:
            con.print(f"miss {qid}: gold={gold} top5={got}", markup=False)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
