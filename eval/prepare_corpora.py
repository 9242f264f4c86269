"""Bring the corpora of dev-format question files onto this machine, at their pinned commits,
and (optionally) index them, so a benchmark can be rerun on a new machine from the committed
question files alone.

    .venv/bin/python eval/prepare_corpora.py eval/data/questions/*.json --out ../corpora \
        [--git NAME=GITDIR ...] [--url 'https://github.com/{repo}.git'] [--index ../ix]

Each file's `corpora` map gives a name, a repository (`owner/name`) and a commit. The source
of a corpus is a local git directory given with `--git NAME=GITDIR` (a mirror or clone), else
a bare clone of `--url` with `{repo}` filled in, kept under OUT/.git/NAME. The tree of the
commit is extracted with `git archive` into OUT/NAME; a tree already extracted at that commit
is kept (a stamp file records it), one at another commit is an error, never overwritten.
With `--index IX`, each corpus is indexed into IX/NAME by `codeteacher index` unless IX/NAME
already holds an index.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

STAMP = ".corpus-commit"  # in OUT/NAME: the commit its tree was extracted from


def corpora_of(files: list[str]) -> dict[str, dict]:
    """name -> {"repo", "commit"} pooled over the question files; one name, two commits is an
    error (the gold files hold at one commit only)."""
    out: dict[str, dict] = {}
    for f in files:
        try:
            spec = json.loads(Path(f).read_text(encoding="utf-8"))["corpora"]
            items = [(n, c["repo"], c["commit"]) for n, c in spec.items()]
        except OSError as exc:
            raise SystemExit(f"error: cannot read {f}: {exc.strerror}") from None
        except (ValueError, KeyError, TypeError, AttributeError):
            raise SystemExit(f"error: {f} has no corpora map of name -> "
                             "{repo, commit}") from None
        for name, repo, commit in items:
            seen = out.setdefault(name, {"repo": repo, "commit": commit})
            if seen["commit"] != commit:
                raise SystemExit(f"error: corpus {name} is pinned at two commits "
                                 f"({seen['commit'][:12]}, {commit[:12]})")
    return out


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        msg = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise SystemExit(f"error: git {args[0]}: {msg}")
    return done.stdout


def source_of(name: str, repo: str, gits: dict[str, str], url: str, out: Path) -> Path:
    if name in gits:
        return Path(gits[name])
    bare = out / ".git" / name
    if not bare.exists():
        bare.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "--bare", "--quiet", url.format(repo=repo), str(bare))
    return bare


def extract(name: str, commit: str, git_dir: Path, out: Path) -> str:
    """OUT/NAME holds the tree of commit afterwards; returns what was done."""
    dest = out / name
    stamp = dest / STAMP
    found = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "--verify",
                            "--quiet", f"{commit}^{{commit}}"], capture_output=True, text=True)
    if found.returncode != 0:
        raise SystemExit(f"error: commit {commit[:12]} of {name} is not in {git_dir}")
    full = found.stdout.strip()
    if stamp.is_file():
        if stamp.read_text().strip() == full:
            return "kept"
        raise SystemExit(f"error: {dest} holds another commit "
                         f"({stamp.read_text().strip()[:12]}); move it away first")
    if dest.exists():
        raise SystemExit(f"error: {dest} exists and was not extracted by this tool")
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=out))
    try:  # extract beside, then rename: never a half tree under OUT/NAME
        with tempfile.TemporaryFile() as tar:
            subprocess.run(["git", "--git-dir", str(git_dir), "archive", full], stdout=tar,
                           check=True, stderr=subprocess.DEVNULL)
            tar.seek(0)
            with tarfile.open(fileobj=tar) as tf:
                tf.extractall(tmp, filter="data")
        (tmp / STAMP).write_text(full + "\n")
        tmp.rename(dest)
    except (subprocess.CalledProcessError, tarfile.TarError, OSError) as exc:
        raise SystemExit(f"error: extracting {name} at {commit[:12]}: {exc}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return "extracted"


def index(name: str, tree: Path, ix_root: Path) -> tuple[str, float]:
    dest = ix_root / name
    if (dest / "manifest.json").is_file():
        return "kept", 0.0
    cli = Path(sys.executable).with_name("codeteacher")
    start = time.perf_counter()
    done = subprocess.run([str(cli), "index", str(tree), "--out", str(dest)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        msg = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise SystemExit(f"error: indexing {name}: {msg}")
    return "built", time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("questions", nargs="+", help="dev-format question files")
    ap.add_argument("--out", required=True, help="folder for the extracted trees")
    ap.add_argument("--git", action="append", default=[], metavar="NAME=GITDIR")
    ap.add_argument("--url", default="https://github.com/{repo}.git")
    ap.add_argument("--index", metavar="IX", help="also index each corpus into IX/NAME")
    args = ap.parse_args(argv)
    gits = {}
    for spec in args.git:
        name, sep, path = spec.partition("=")
        if not sep or not Path(path).is_dir():
            raise SystemExit(f"error: --git {spec!r}: expected NAME=GITDIR of a git directory")
        gits[name] = path
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = Table(title="corpora")
    for col in ("corpus", "repository", "commit", "tree", "files", "index", "index s"):
        table.add_column(col, justify="right" if col in ("files", "index s") else "left")
    for name, c in corpora_of(args.questions).items():
        src = source_of(name, c["repo"], gits, args.url, out)
        done = extract(name, c["commit"], src, out)
        n_files = sum(1 for p in (out / name).rglob("*")
                      if p.is_file() and not p.is_symlink()) - 1
        ix, secs = index(name, out / name, Path(args.index)) if args.index else ("-", 0.0)
        table.add_row(name, c["repo"], c["commit"][:12], done, str(n_files), ix,
                      f"{secs:.1f}" if secs else "")
        print(f"{name}: tree {done}, index {ix}", file=sys.stderr, flush=True)
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
