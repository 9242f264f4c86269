"""Collect stage: walk a repository and decide what gets indexed.

Honours .gitignore files (nested ones too, via pathspec) and configured excludes, is safe
against symlink loops, and skips binary, undecodable and oversized files with counted reasons.
Each file gets a language, a category (code/doc/build) and a scope (src/test/example/build/docs)
guessed from its path alone, so the rules work for any repository layout.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path, PurePosixPath

import pathspec

from ..contracts.errors import UserError
from ..contracts.models import CollectReport, FileRecord
from ..contracts.settings import CollectSettings

_LANG_BY_EXT = {
    ".c": "c", ".cu": "cuda", ".cuh": "cuda",
    ".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text",
    ".cmake": "cmake",
}
# Folder names that say what a file is for; matched on any path component.
_TEST_DIRS = {"test", "tests", "testing", "unit_tests", "unittests", "unittest", "unit-tests",
              "gtest", "ctest", "regression", "regressions", "integration_tests"}
_EXAMPLE_DIRS = {"example", "examples", "demo", "demos", "tutorial", "tutorials", "sample",
                 "samples", "apps", "applications", "miniapps", "mini-apps", "mini_apps",
                 "benchmarks", "benchmark", "bench", "showcase"}
_TEST_FILE = re.compile(r"^(test|Test)[_A-Z]|(_test|_tests|Test|Tests)$|^test$")
_DOC_DIRS = {"doc", "docs", "documentation", "manual", "manuals", "guide", "guides"}


def classify_scope(rel: str, category: str) -> str:
    parts = [p.lower() for p in PurePosixPath(rel).parts[:-1]]
    stem = PurePosixPath(rel).stem
    if category == "build":
        return "build"
    if any(p in _TEST_DIRS for p in parts) or (category in ("code", "script")
                                               and _TEST_FILE.search(stem)):
        return "test"
    if any(p in _EXAMPLE_DIRS for p in parts):
        return "example"
    if category == "doc" or any(p in _DOC_DIRS for p in parts):
        return "docs"
    return "src"


def _file_kind(name: str, settings: CollectSettings) -> tuple[str, str] | None:
    """(language, category) of a file name, or None if it is not indexed."""
    suffix = PurePosixPath(name).suffix.lower()
    if name in settings.build_names or suffix in settings.build_extensions:
        return ("cmake" if "cmake" in name.lower() else "make"), "build"
    if suffix in settings.code_extensions:
        return _LANG_BY_EXT.get(suffix, "cpp"), "code"
    if suffix in settings.doc_extensions:
        return _LANG_BY_EXT.get(suffix, "text"), "doc"
    if suffix in settings.script_extensions:
        return suffix.lstrip("."), "script"
    if not suffix and name.upper() in {n.upper() for n in settings.doc_extensionless}:
        return "text", "doc"
    return None


class _Ignores:
    """Stack of .gitignore specs, each applied to paths relative to its own folder."""

    def __init__(self, root: Path, settings: CollectSettings):
        self.root = root
        self.specs: list[tuple[str, pathspec.PathSpec]] = [
            ("", pathspec.GitIgnoreSpec.from_lines(settings.exclude))]
        self.respect = settings.respect_gitignore

    def load(self, rel_dir: str, abs_dir: Path) -> None:
        gi = abs_dir / ".gitignore"
        if self.respect and gi.is_file():
            try:
                lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                return
            self.specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for base, spec in self.specs:
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1:] if base else rel
            if spec.match_file(sub + ("/" if is_dir else "")):
                return True
        return False


def collect(root: str | Path, settings: CollectSettings | None = None,
            include: list[str] | None = None, exclude: list[str] | None = None) -> CollectReport:
    settings = settings or CollectSettings()
    root_path = Path(root).expanduser()
    if not root_path.exists():
        raise UserError(f"repository path does not exist: {root}")
    if not root_path.is_dir():
        raise UserError(f"repository path is not a directory: {root}")
    root_path = root_path.resolve()
    if exclude:
        settings = settings.model_copy(update={"exclude": settings.exclude + list(exclude)})
    include_spec = pathspec.GitIgnoreSpec.from_lines(include) if include else None
    ignores = _Ignores(root_path, settings)
    files: list[FileRecord] = []
    skipped: dict[str, int] = {}
    examples: dict[str, list[str]] = {}

    def skip(reason: str, rel: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1
        ex = examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(rel)

    seen_dirs: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root_path, followlinks=settings.follow_symlinks,
                                                onerror=lambda e: skip("unreadable", str(e.filename))):
        abs_dir = Path(dirpath)
        try:
            st = abs_dir.stat()
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen_dirs:  # symlink loop or a second route to a folder
            skip("symlink loop", str(abs_dir.relative_to(root_path)))
            dirnames[:] = []
            continue
        seen_dirs.add((st.st_dev, st.st_ino))
        rel_dir = abs_dir.relative_to(root_path).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        ignores.load(rel_dir, abs_dir)
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if d == ".git" or ignores.ignored(rel, True):
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            kind = _file_kind(name, settings)
            if kind is None or ignores.ignored(rel, False):
                continue
            if include_spec is not None and not include_spec.match_file(rel):
                continue
            record = _read_record(abs_dir / name, rel, kind, settings, skip, root_path)
            if record is not None:
                files.append(record)
    return CollectReport(root=str(root_path), files=files, skipped=skipped,
                         skipped_examples=examples)


def _read_record(path: Path, rel: str, kind: tuple[str, str], settings: CollectSettings,
                 skip, root: Path) -> FileRecord | None:
    try:
        if path.is_symlink() and not path.resolve().is_file():
            skip("broken symlink", rel)
            return None
        # Never index what lies outside the repository (a file symlink, or a file reached
        # through a followed directory symlink).
        if not path.resolve().is_relative_to(root):
            skip("symlink out of the repository", rel)
            return None
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
            skip("not a regular file", rel)
            return None
        size = info.st_size
        if size > settings.max_file_bytes:
            skip("too large", rel)
            return None
        data = path.read_bytes()
    except (OSError, RuntimeError):
        skip("unreadable", rel)
        return None
    if b"\x00" in data[:8192]:
        skip("binary", rel)
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        skip("not UTF-8", rel)
        return None
    language, category = kind
    return FileRecord(path=rel, language=language, category=category,
                      scope=classify_scope(rel, category), size=size,
                      sha256=hashlib.sha256(data).hexdigest(),
                      lines=text.count("\n") + (0 if text.endswith("\n") or not text else 1))


def read_text(root: str | Path, rel: str) -> str:
    return (Path(root) / rel).read_bytes().decode("utf-8")
