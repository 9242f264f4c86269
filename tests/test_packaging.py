"""A non-editable install carries everything `codeteacher demo` needs: the sample app, its demo
questions, the prompts. Built as a real wheel from this checkout, installed into a bare folder
(dependencies come from the test venv), and run from a folder outside the repository."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _pip(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def test_wheel_holds_the_demo_and_runs_it(tmp_path):
    res = _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(REPO))
    assert res.returncode == 0, res.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("codeteacher-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "codeteacher/demo/demo.json" in names
    assert "codeteacher/demo/minipic/src/deposit.cpp" in names
    assert "codeteacher/prompts/final_answer.txt" in names
    assert not any(n.startswith("codeteacher/data/") for n in names)

    target = tmp_path / "site"
    res = _pip("install", "--no-deps", "--target", str(target), str(wheel))
    assert res.returncode == 0, res.stderr[-2000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    # only the installed copy of codeteacher is importable: the checkout's src/ is not on the path
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    probe = subprocess.run([sys.executable, "-c", "import codeteacher; print(codeteacher.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip().startswith(str(target)), probe.stdout + probe.stderr
    run = subprocess.run([sys.executable, "-m", "codeteacher.shells.cli", "demo", "--questions", "1"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert (work / "embeddings" / "minipic" / "manifest.json").is_file()
    assert "deposit" in run.stdout.lower()
