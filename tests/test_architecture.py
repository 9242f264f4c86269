"""The package layering of docs/ARCHITECTURE.md, checked with import-linter's `layers` contract
(pyproject.toml). The second test proves the check can fail: a copy of the package with one
upward import (contracts -> shells) is rejected."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(config: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(pythonpath), "HOME": str(config.parent)}
    return subprocess.run([str(LINT), "--config", str(config), "--no-cache"], cwd=config.parent,
                          env=env, capture_output=True, text=True, timeout=300)


def test_layers_contract_holds():
    res = _lint(REPO / "pyproject.toml", REPO / "src")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 kept, 0 broken" in res.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "codeteacher", src / "codeteacher",
                    ignore=shutil.ignore_patterns("__pycache__", "demo"))
    errors = src / "codeteacher" / "contracts" / "errors.py"
    errors.write_text(errors.read_text() + "\nfrom ..shells import cli  # noqa: E402,F401\n")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    res = _lint(tmp_path / "pyproject.toml", src)
    assert res.returncode != 0
    assert "codeteacher.contracts.errors -> codeteacher.shells.cli" in res.stdout


def test_every_subcommand_is_registered():
    """A broken import of one of our own modules must fail loudly, never drop a command."""
    res = subprocess.run([sys.executable, "-m", "codeteacher.shells.cli", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for command in ("index", "demo", "ask", "stage", "serve", "mcp-config", "eval", "papers"):
        assert command in res.stdout
