"""The workflow through a real one-node SLURM cluster (`snakemake --profile slurm`).

Needs root and the Debian packages of .ci/install-slurm.sh. Where they are missing the test is
skipped, except in CI (CI=true), where that is a failure. Every daemon is started in a private
folder and stopped by its PID in the fixture's teardown (tests/slurm_cluster.py).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm_cluster import OneNodeCluster, missing_binaries  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "src" / "codeteacher" / "demo" / "minipic"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

pytestmark = pytest.mark.slurm


def _unavailable() -> str | None:
    missing = missing_binaries()
    if missing:
        return f"SLURM/munge not installed ({', '.join(missing)}); run .ci/install-slurm.sh"
    if os.geteuid() != 0:
        return "the one-node SLURM cluster runs its daemons as root"
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = _unavailable()
    if why:
        if IN_CI:
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)
    # a short path: the munge socket path must stay under 108 bytes
    root = Path(tmp_path_factory.mktemp("slurm"))
    c = OneNodeCluster(root)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def test_workflow_runs_through_slurm(cluster, tmp_path):
    work = tmp_path / "wf"
    work.mkdir()
    shutil.copytree(SAMPLE, work / "minipic")
    shutil.copy(REPO / "runtime_settings.json", work / "settings.json")
    config = {"corpora": [{"name": "minipic", "path": str(work / "minipic")}],
              "settings": str(work / "settings.json"), "explain_shards": 2, "gpu": False}
    (work / "config.yaml").write_text(json.dumps(config))
    # The profile as users run it, with the test cluster's limits: 2 CPUs, no GPU, no
    # accounting; partition from the environment as the profile documents.
    cores = str(cluster.cpus)
    cmd = [sys.executable, "-m", "snakemake", "--profile", "slurm",
           "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--configfile", str(work / "config.yaml"),
           "--jobs", "4", "--latency-wait", "5", "--slurm-no-account",
           "--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs",
           "--set-threads", f"embed={cores}", "explain=1", "merge_explanations=1",
           "--set-resources", "explain:mem_mb=1000", "merge_explanations:mem_mb=1000",
           "embed:mem_mb=3000"]
    env = dict(cluster.env, CODETEACHER_SLURM_PARTITION="debug")
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:] + "\n" + cluster.logs()

    # every job of the chain went through sbatch (the profile groups collect..entities into
    # one job "prepare"), and SLURM saw each one complete
    submitted = re.findall(r"submitted with SLURM jobid (\d+)", out)
    rules = set(re.findall(r"^\s*rule (\w+):", out, re.M))
    assert rules == {"collect", "parse", "graph", "entities", "explain", "merge_explanations",
                     "embed", "index"}, out[-3000:]
    assert "Group job prepare" in out
    assert len(submitted) == 6, out[-3000:]  # prepare, explain x2, merge, embed, index
    states = cluster.jobs()
    assert all(states.get(j) == "COMPLETED" for j in submitted), (states, submitted)
    slurm_logs = list((work / ".snakemake" / "slurm_logs").rglob("*.log"))
    assert {p.stem for p in slurm_logs} >= set(submitted), slurm_logs

    # the index answers
    ask = subprocess.run([str(Path(sys.executable).parent / "ask"),
                          "how is charge deposited onto the grid?",
                          "--index", str(work / "embeddings" / "minipic" / "index"), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert ask.returncode == 0, ask.stderr
    evidence = json.loads(ask.stdout)["evidence"]
    assert evidence and any(e["path"].startswith("src/") for e in evidence)

    # a second run submits nothing
    again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
