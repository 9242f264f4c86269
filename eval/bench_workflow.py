"""Wall time of the Snakemake workflow: local profile vs a one-node SLURM cluster, scheduling
overhead per job, and how the explain stage divides over shards.

    .venv/bin/python eval/bench_workflow.py                      # minipic, local + SLURM
    .venv/bin/python eval/bench_workflow.py --corpus ippl=/work/corpora/ippl --no-slurm
    .venv/bin/python eval/bench_workflow.py --shards 1,2,4       # explain scaling (LLM preset)

Every run starts from an empty work folder (a cold build). Per-job seconds come from the
rules' benchmark files (embeddings/<corpus>/benchmarks/*.tsv); the overhead per job is
(wall - critical path of job seconds) / scheduling steps on that path. SLURM needs root and
the packages of .ci/install-slurm.sh. Results: JSON (--out) and a table on stdout. Timings
depend on the load of the machine; the script records the load average next to them.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
PATH_RULES = ["collect", "parse", "graph", "entities", "explain", "merge_explanations", "embed",
              "index"]


def snakemake(work: Path, *args: str, env=None, timeout=7200) -> tuple[float, str, int]:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(work), "--configfile", str(work / "config.yaml"), *args]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env,
                         timeout=timeout)
    wall = time.perf_counter() - t0
    if run.returncode != 0:
        sys.exit(f"snakemake failed in {work}:\n{(run.stdout + run.stderr)[-3000:]}")
    return wall, run.stdout + run.stderr, run.returncode


def job_seconds(work: Path, corpus: str) -> dict[str, float]:
    out = {}
    for tsv in sorted((work / "embeddings" / corpus / "benchmarks").glob("*.tsv")):
        with tsv.open() as f:
            row = next(csv.DictReader(f, delimiter="\t"))
        out[tsv.stem] = float(row["s"])
    return out


def critical_path(secs: dict[str, float]) -> tuple[float, int]:
    total, n = 0.0, 0
    for rule in PATH_RULES:
        if rule == "explain":
            shards = [v for k, v in secs.items() if k.startswith("explain_")]
            if shards:
                total, n = total + max(shards), n + 1
        elif rule in secs:
            total, n = total + secs[rule], n + 1
    return total, n


def new_work(corpus: str, path: Path, settings: Path, shards: int, include=()) -> Path:
    work = Path(tempfile.mkdtemp(prefix=f"ctbench-{corpus}-"))
    shutil.copy(settings, work / "settings.json")  # a snapshot: edits meanwhile re-run nothing
    config = {"corpora": [{"name": corpus, "path": str(path), "include": list(include)}],
              "settings": str(work / "settings.json"), "explain_shards": shards, "gpu": False}
    (work / "config.yaml").write_text(json.dumps(config))
    return work


def summarize(label: str, corpus: str, secs: dict[str, float], wall: float, noop: float,
              noop_out: str, jobs: int, grouped: int = 0) -> dict:
    """grouped: rules on the critical path that run inside one group job with others."""
    path_s, path_jobs = critical_path(secs)
    path_jobs -= grouped
    return {"run": label, "corpus": corpus, "wall_s": round(wall, 1),
            "noop_rerun_s": round(noop, 1), "noop_did_nothing": "Nothing to be done" in noop_out,
            "jobs": jobs,
            "job_seconds": {k: round(v, 2) for k, v in secs.items()},
            "critical_path_s": round(path_s, 1),
            "overhead_per_job_s": round((wall - path_s) / max(1, path_jobs), 1),
            "load_avg": os.getloadavg()[0]}


def bench_local(corpus, path, settings, shards, cores) -> dict:
    work = new_work(corpus, path, settings, shards)
    try:
        wall, out, _ = snakemake(work, "--profile", "profiles/local", "--cores", str(cores))
        secs = job_seconds(work, corpus)
        noop, noop_out, _ = snakemake(work, "--profile", "profiles/local", "--cores", str(cores))
        jobs = out.count("Finished jobid") - 1  # minus `all`
        return summarize("local", corpus, secs, wall, noop, noop_out, jobs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_slurm(corpus, path, settings, shards, cluster) -> dict:
    work = new_work(corpus, path, settings, shards)
    cores = str(cluster.cpus)
    args = ["--profile", "slurm", "--jobs", "4", "--latency-wait", "5", "--slurm-no-account",
            "--slurm-init-seconds-before-status-checks", "2",
            "--set-threads", f"embed={cores}", "explain=1", "merge_explanations=1",
            "--set-resources", "explain:mem_mb=1000", "merge_explanations:mem_mb=1000",
            "embed:mem_mb=3000"]
    env = dict(cluster.env, CODETEACHER_SLURM_PARTITION="debug")
    try:
        wall, out, _ = snakemake(work, *args, env=env)
        secs = job_seconds(work, corpus)
        noop, noop_out, _ = snakemake(work, *args, env=env)
        # the profile runs collect..entities as one group job: 3 fewer scheduling steps
        res = summarize("slurm", corpus, secs, wall, noop, noop_out,
                        out.count("submitted with SLURM"), grouped=3)
        res["sbatch_jobs"] = res["jobs"]
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_shards(corpus, path, settings, counts, cores, include) -> list[dict]:
    rows = []
    for n in counts:
        work = new_work(corpus, path, settings, n, include)
        try:
            target = f"embeddings/{corpus}/work/"
            snakemake(work, "--profile", "profiles/local", "--cores", str(cores),
                      target + "entities.jsonl")
            wall, _, _ = snakemake(work, "--profile", "profiles/local", "--cores", str(cores),
                                   target + "explanations.jsonl")
            secs = job_seconds(work, corpus)
            shard_s = [v for k, v in secs.items() if k.startswith("explain_")]
            explained = sum(1 for _ in (work / "embeddings" / corpus / "work" /
                                        "explanations.jsonl").open())
            rows.append({"shards": n, "explain_and_merge_wall_s": round(wall, 1),
                         "explanations": explained,
                         "max_shard_s": round(max(shard_s), 1),
                         "sum_shard_s": round(sum(shard_s), 1),
                         "merge_s": round(secs.get("merge_explanations", 0.0), 1),
                         "load_avg": os.getloadavg()[0]})
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", default=[],
                    help="NAME=PATH (default: minipic=src/codeteacher/demo/minipic)")
    ap.add_argument("--settings", default=str(REPO / "runtime_settings.json"))
    ap.add_argument("--explain-shards", type=int, default=2)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--no-local", action="store_true")
    ap.add_argument("--no-slurm", action="store_true")
    ap.add_argument("--shards", default="", help="e.g. 1,2,4: explain scaling runs")
    ap.add_argument("--shard-settings", default=str(REPO / "config/settings/local-llm.json"))
    ap.add_argument("--shard-include", action="append", default=[],
                    help="gitignore glob limiting the scaling corpus (e.g. 'src/**')")
    ap.add_argument("--out", default=str(REPO / "runs/bench/workflow_bench.json"))
    args = ap.parse_args()
    corpora = [c.split("=", 1) for c in args.corpus] or [["minipic",
                                                          str(REPO / "src/codeteacher/demo/minipic")]]
    settings = Path(args.settings).resolve()
    results: dict = {"runs": [], "shards": [], "cpus": os.cpu_count()}

    for name, path in corpora:
        if not args.no_local:
            results["runs"].append(bench_local(name, Path(path).resolve(), settings,
                                               args.explain_shards, args.cores))
            print(json.dumps(results["runs"][-1]), flush=True)
    if not args.no_slurm:
        from slurm_cluster import OneNodeCluster, missing_binaries

        if missing_binaries() or os.geteuid() != 0:
            print("SLURM skipped: needs root and .ci/install-slurm.sh", file=sys.stderr)
        else:
            with tempfile.TemporaryDirectory(prefix="ctslurm-") as root, \
                    OneNodeCluster(Path(root)) as cluster:
                for name, path in corpora:
                    results["runs"].append(bench_slurm(name, Path(path).resolve(), settings,
                                                       args.explain_shards, cluster))
                    print(json.dumps(results["runs"][-1]), flush=True)
    if args.shards:
        preset = Path(args.shard_settings)
        if not preset.is_file():
            print(f"explain scaling skipped: {preset} not found", file=sys.stderr)
        else:
            name, path = corpora[0]
            results["shards"] = bench_shards(name, Path(path).resolve(), preset.resolve(),
                                             [int(x) for x in args.shards.split(",")],
                                             args.cores, args.shard_include)
            for row in results["shards"]:
                print(json.dumps(row), flush=True)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print("\n| run | corpus | wall s | no-op s | jobs | critical path s | overhead/job s |")
    print("|---|---|---|---|---|---|---|")
    for r in results["runs"]:
        print(f"| {r['run']} | {r['corpus']} | {r['wall_s']} | {r['noop_rerun_s']} | "
              f"{r['jobs']} | {r['critical_path_s']} | {r['overhead_per_job_s']} |")
    if results["shards"]:
        print("\n| shards | explanations | explain+merge wall s | max shard s | sum shard s "
              "| merge s |")
        print("|---|---|---|---|---|---|")
        for r in results["shards"]:
            print(f"| {r['shards']} | {r['explanations']} | {r['explain_and_merge_wall_s']} | "
                  f"{r['max_shard_s']} | {r['sum_shard_s']} | {r['merge_s']} |")
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
