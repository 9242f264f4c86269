#!/usr/bin/env python3
"""Score the paper's published IPPL runs with codeteacher's deterministic metrics, and check our
reference-token coverage against the coverage values the paper's report lists per answer.

Usage: .venv/bin/python eval/score_published.py [--benchmark DIR] [--corpus DIR]
                                                [--markdown OUT.md] [--json OUT.json]
--benchmark: shared/benchmarks/ippl (questions, references, published_runs/)
--corpus:    the IPPL checkout (commit 84f0eceb); gold files are restricted to its files.
             Without it gold files are not restricted (the paper's count of 38 needs it).
The judge columns are the paper's own verdicts (judge_verdicts.csv), not ours.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

from codeteacher.contracts.settings.evaluation import EvalSettings
from codeteacher.evaluation.io import corpus_files_from
from codeteacher.evaluation.metrics import aggregate_by_category, mean, pearson
from codeteacher.evaluation.report import fmt, metric_columns
from codeteacher.evaluation.scoring import compare_runs

REPO = Path(__file__).resolve().parents[1]
RUN_FILES = {  # judge_verdicts.csv run name -> published answers file
    "rag_qwen35_9b": "eval_v2_qwen3.5-9B.json",
    "rag_qwen25_7b": "eval_v2_qwen2.5-7B-q4_K_M.json",
    "": "eval_v2_qwen3.5-35B.json",  # not judged in the csv
}


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(out + ["| " + " | ".join(map(str, r)) + " |" for r in rows])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--benchmark", default=os.environ.get(
        "CODETEACHER_IPPL_BENCH", str(REPO.parent / "shared" / "benchmarks" / "ippl")))
    ap.add_argument("--corpus", default=os.environ.get("CODETEACHER_IPPL", "/work/corpora/ippl"))
    ap.add_argument("--markdown", help="also write the tables to this file")
    ap.add_argument("--json", help="write all scores to this file")
    args = ap.parse_args()
    bench = Path(args.benchmark)
    runs_dir = bench / "published_runs"
    corpus = corpus_files_from(args.corpus) if Path(args.corpus).is_dir() else None
    cfg = EvalSettings()
    files = [runs_dir / f for f in RUN_FILES.values()]
    scores = compare_runs(files, cfg, references_path=bench / "reference_answers_v2.json",
                          corpus_files=corpus)

    verdicts = list(csv.DictReader(open(runs_dir / "judge_verdicts.csv", encoding="utf-8")))
    by_file = {f: s for f, s in zip(RUN_FILES.values(), scores)}
    ours, theirs, labels = [], [], []
    for name, file in RUN_FILES.items():
        rows = {r["id"]: r for r in by_file[file]["per_answer"]}
        for v in (v for v in verdicts if v["run"] == name):
            row = rows[v["id"]]
            row["verdict"] = v["verdict"]
            row["judge_score"] = {"Correct": 1.0, "Partial": 0.5, "Incorrect": 0.0}[v["verdict"]]
            ours.append(row["coverage"])
            theirs.append(float(v["reference_token_coverage"]))
            labels.append(v["verdict"])
    for s in scores:  # re-aggregate with the paper's verdicts merged in
        s["summary"] = aggregate_by_category(s["per_answer"], s["recall_ks"])

    out = [f"Gold files restricted to {len(corpus)} corpus files ({args.corpus})" if corpus
           else "Gold files NOT restricted to a corpus (no --corpus)", ""]
    names = [s["run"] for s in scores]
    cols = [c for c in metric_columns(cfg.recall_ks) if not c[0].startswith(("context", "tokens"))
            and c[0] != "abstention_rate"]
    out += ["## Overall", "", md_table(["score"] + names, [
        [title] + [fmt(key, s["summary"]["overall"]) for s in scores] for key, title in cols])]
    cats = list(scores[0]["summary"])
    for key, title in (("answer_recall@5", "Evidence-file recall@5 of the answer's Evidence"),
                       ("coverage", "Reference-token coverage"),
                       ("judge", "Paper's judge (GPT-5.5) mean ± SE")):
        out += ["", f"## {title} per category", "", md_table(["category"] + names, [
            [c] + [fmt(key, s["summary"].get(c, {})) for s in scores] for c in cats])]

    diffs = [abs(a - b) for a, b in zip(ours, theirs)]
    out += ["", "## Coverage validation against judge_verdicts.csv", "",
            f"{len(ours)} answers (2 runs): Pearson r = {pearson(ours, theirs):.3f}, "
            f"mean |ours - report| = {mean(diffs):.3f}, within 0.05: "
            f"{sum(d <= 0.05 for d in diffs)}, within 0.10: {sum(d <= 0.10 for d in diffs)}, "
            f"equal at 2 decimals: "
            f"{sum(round(a, 2) == round(b, 2) for a, b in zip(ours, theirs))}.",
            "", md_table(["judge verdict", "n", "our coverage", "report's coverage"], [
                [lab, labels.count(lab),
                 f"{mean([o for o, l in zip(ours, labels) if l == lab]):.3f}",
                 f"{mean([t for t, l in zip(theirs, labels) if l == lab]):.3f}"]
                for lab in ("Correct", "Partial", "Incorrect")])]
    text = "\n".join(out) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": scores}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
