"""`eval/prepare_corpora.py`: the corpora of committed question files are brought back at
their pinned commits from real git repositories (a local one, and one cloned by URL), kept
when already there, and never overwritten by another commit."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "eval" / "prepare_corpora.py"


def _repo(path: Path) -> tuple[str, str]:
    def git(*a):
        return subprocess.run(["git", *a], cwd=path, check=True, capture_output=True,
                              text=True).stdout.strip()
    path.mkdir()
    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (path / "src").mkdir()
    (path / "src" / "solver.c").write_text("int solve(void) { return 1; }\n")
    git("add", ".")
    git("commit", "-qm", "one")
    first = git("rev-parse", "HEAD")
    (path / "src" / "solver.c").write_text("int solve(void) { return 2; }\n")
    (path / "README.md").write_text("later\n")
    git("add", ".")
    git("commit", "-qm", "two")
    return first, git("rev-parse", "HEAD")


def _questions(path: Path, name: str, commit: str) -> Path:
    path.write_text(json.dumps({"corpora": {name: {"repo": "someone/code", "commit": commit}},
                                "questions": []}))
    return path


def _run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_trees_come_back_at_the_pinned_commit_and_are_kept(tmp_path):
    first, second = _repo(tmp_path / "code")
    q = _questions(tmp_path / "q.json", "Code", first)
    out = tmp_path / "corpora"
    done = _run(q, "--out", out, "--git", f"Code={tmp_path / 'code' / '.git'}")
    assert done.returncode == 0, done.stderr
    assert (out / "Code" / "src" / "solver.c").read_text() == "int solve(void) { return 1; }\n"
    assert not (out / "Code" / "README.md").exists()  # the later commit's file is not there
    assert "Code: tree extracted" in done.stderr
    again = _run(q, "--out", out, "--git", f"Code={tmp_path / 'code' / '.git'}")
    assert again.returncode == 0 and "Code: tree kept" in again.stderr
    # The same name pinned at another commit is refused, and the tree stays as it was.
    other = _run(_questions(tmp_path / "q2.json", "Code", second), "--out", out,
                 "--git", f"Code={tmp_path / 'code' / '.git'}")
    lines = other.stderr.strip().splitlines()
    assert other.returncode != 0 and len(lines) == 1 and "holds another commit" in lines[0]
    assert (out / "Code" / "src" / "solver.c").read_text() == "int solve(void) { return 1; }\n"


def test_a_corpus_without_a_local_copy_is_cloned_from_the_url(tmp_path):
    _, second = _repo(tmp_path / "code")
    q = _questions(tmp_path / "q.json", "Code", second)
    done = _run(q, "--out", tmp_path / "corpora", "--url", f"file://{tmp_path}/code")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "corpora" / "Code" / "README.md").read_text() == "later\n"


def test_bad_input_is_one_line(tmp_path):
    first, _ = _repo(tmp_path / "code")
    cases = [
        ([tmp_path / "absent.json"], "cannot read"),
        ([_questions(tmp_path / "q.json", "Code", "0" * 40), "--git",
          f"Code={tmp_path / 'code' / '.git'}"], "is not in"),
        ([_questions(tmp_path / "q3.json", "Code", first), "--git", "Code=/nowhere"],
         "expected NAME=GITDIR"),
    ]
    for args, says in cases:
        done = _run(*args, "--out", tmp_path / "corpora")
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1 and says in lines[0], done.stderr
        assert not (tmp_path / "corpora" / "Code").exists()
