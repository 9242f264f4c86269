"""Collect stage: walk a repository and decide what gets indexed.

Honours .gitignore files (nested ones too, via pathspec) and configured excludes, is safe
against symlink loops, and indexes every text file under the size limit: known extensions and
names get their category (code/build/doc/script); any other file is recognised as text by its
content and chunked as a document or as a configuration/data file by what its lines look like.
Nothing is left out silently: every file (or folder) not indexed is counted under a reason.
Scope (src/test/example/build/docs) is guessed from the path alone, for any layout.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath

import pathspec

from ..contracts.errors import UserError
from ..contracts.models import CollectReport, FileRecord
from ..contracts.settings import CollectSettings
from ..index.files import RefusedFile, read_repo_file

_LANG_BY_EXT = {
    ".c": "c", ".cu": "cuda", ".cuh": "cuda", ".hip": "hip",
    ".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text",
    ".cmake": "cmake",
}
# Folder names that say what a file is for; matched on any path component.
_TEST_DIRS = {"test", "tests", "testing", "unit_tests", "unittests", "unittest", "unit-tests",
              "unit_test", "unit-test", "testsuite", "test_suite", "tst", "gtest", "ctest",
              "regression", "regressions", "integration_tests"}
# The same words joined to a kind of test: unittesting, regression_tests, perf-tests.
_TEST_DIR = re.compile(r"^(?:unit|integration|regression|functional|func|system|perf|"
                       r"performance|smoke|acceptance)[_-]?(?:test|tests|testing)$")
_EXAMPLE_DIRS = {"example", "examples", "demo", "demos", "tutorial", "tutorials", "sample",
                 "samples", "apps", "applications", "miniapps", "mini-apps", "mini_apps",
                 "benchmarks", "benchmark", "bench", "showcase"}
# test_x, TestX, tstX (a common short prefix), x_test, XTest; not "testbed.c" or "latest.h".
_TEST_FILE = re.compile(r"^(test|Test|tst)[_A-Z]|(_test|_tests|Test|Tests)$|^test$")
_DOC_DIRS = {"doc", "docs", "documentation", "manual", "manuals", "guide", "guides"}


def classify_scope(rel: str, category: str) -> str:
    parts = [p.lower() for p in PurePosixPath(rel).parts[:-1]]
    stem = PurePosixPath(rel).stem
    if category == "build":
        return "build"
    if any(p in _TEST_DIRS or _TEST_DIR.match(p) for p in parts) \
            or (category in ("code", "script") and _TEST_FILE.search(stem)):
        return "test"
    if any(p in _EXAMPLE_DIRS for p in parts):
        return "example"
    if category == "doc" or any(p in _DOC_DIRS for p in parts):
        return "docs"
    return "src"


def _file_kind(name: str, settings: CollectSettings) -> tuple[str, str] | None:
    """(language, category) of a file known by its name or extension, else None."""
    suffix = PurePosixPath(name).suffix.lower()
    if name in settings.build_names or suffix in settings.build_extensions \
            or name.startswith(tuple(settings.build_name_prefixes)):
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


# An interpreter is named by its absolute path ("#!/usr/bin/env python3"); "#![...]" opens a
# Rust inner attribute, not a script.
_SHEBANG = re.compile(r"#![ \t]*(/\S+)(?:[ \t]+(\S+))?")
_PROSE_CHARS = re.compile(r"[A-Za-z.,;:'\"()!?\-]")


def _content_kind(name: str, text: str, settings: CollectSettings) -> tuple[str, str]:
    """(language, category) of a text file not known by name, from generic evidence only:
    a template (X.in) is classified as X, a shebang makes a script, prose makes a document,
    and anything else is a configuration or data file (line windows, category script)."""
    low = name.lower()
    for tail in (".in", "in"):  # config.h.in, Makefile.in; foo.cmakein
        inner = name[: -len(tail)] if low.endswith(tail) and len(name) > len(tail) + 1 else ""
        if inner and (tail == ".in" or inner.lower().endswith(".cmake")):
            kind = _file_kind(inner, settings)
            if kind is not None:
                return kind
    m = _SHEBANG.match(text)
    if m:
        prog = PurePosixPath(m.group(2) if m.group(1).endswith("/env") and m.group(2)
                             else m.group(1)).name
        return re.sub(r"[\d.]+$", "", prog) or prog, "script"
    lines = [ln for ln in text.splitlines()[:400] if ln.strip()]
    prose = 0
    for ln in lines:
        words = ln.split()
        chars = sum(len(w) for w in words)
        if len(words) >= settings.prose_min_words and chars and \
                len(_PROSE_CHARS.findall(ln)) >= 0.85 * chars:
            prose += 1
    if lines and prose >= settings.prose_min_share * len(lines):
        return "text", "doc"
    return (PurePosixPath(low).suffix.lstrip(".") or "text"), "script"


class _Ignores:
    """Stack of .gitignore specs, each applied to paths relative to its own folder; `why`
    names the rule set that excluded a path."""

    def __init__(self, root: Path, settings: CollectSettings, extra: list[str] | None):
        self.root = root
        self.specs: list[tuple[str, pathspec.PathSpec, str]] = [
            ("", pathspec.GitIgnoreSpec.from_lines(settings.exclude), "excluded by settings")]
        if extra:
            self.specs.append(("", pathspec.GitIgnoreSpec.from_lines(extra),
                               "excluded by --exclude"))
        self.respect = settings.respect_gitignore

    def load(self, rel_dir: str, abs_dir: Path) -> None:
        gi = abs_dir / ".gitignore"
        if self.respect and gi.is_file():
            try:
                lines = read_repo_file(self.root, f"{rel_dir}/.gitignore" if rel_dir else
                                       ".gitignore", 1 << 20).decode("utf-8", "replace")
            except (OSError, UserError):
                return
            self.specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines.splitlines()),
                               "excluded by .gitignore"))

    def why(self, rel: str, is_dir: bool) -> str | None:
        for base, spec, reason in self.specs:
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1:] if base else rel
            if spec.match_file(sub + ("/" if is_dir else "")):
                return reason
        return None


def collect(root: str | Path, settings: CollectSettings | None = None,
            include: list[str] | None = None, exclude: list[str] | None = None) -> CollectReport:
    settings = settings or CollectSettings()
    root_path = Path(root).expanduser()
    if not root_path.exists():
        raise UserError(f"repository path does not exist: {root}")
    if not root_path.is_dir():
        raise UserError(f"repository path is not a directory: {root}")
    root_path = root_path.resolve()
    include_spec = pathspec.GitIgnoreSpec.from_lines(include) if include else None
    ignores = _Ignores(root_path, settings, list(exclude or []))
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
                                                onerror=lambda e: skip("unreadable folder",
                                                                       str(e.filename))):
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
            why = "version control (.git folder)" if d == ".git" else ignores.why(rel, True)
            if why is None and not settings.follow_symlinks and (abs_dir / d).is_symlink():
                why = "symlinked folder (not followed)"
            if why:
                skip(f"{why} (folder)", rel)
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            why = ignores.why(rel, False)
            if why is None and include_spec is not None and not include_spec.match_file(rel):
                why = "outside --include"
            if why:
                skip(why, rel)
                continue
            record = _read_record(rel, name, settings, skip, root_path)
            if record is not None:
                files.append(record)
    return CollectReport(root=str(root_path), files=files, skipped=skipped,
                         skipped_examples=examples)


def _read_record(rel: str, name: str, settings: CollectSettings, skip, root: Path
                 ) -> FileRecord | None:
    kind = _file_kind(name, settings)
    if kind is None and not settings.index_other_text:
        skip("not a known file type", rel)
        return None
    try:
        data = read_repo_file(root, rel, settings.max_file_bytes)
    except RefusedFile as exc:
        skip(exc.reason, rel)
        return None
    except (OSError, RuntimeError, ValueError):
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
    if kind is None:
        if not text.strip():
            skip("empty", rel)
            return None
        kind = _content_kind(name, text, settings)
    language, category = kind
    return FileRecord(path=rel, language=language, category=category,
                      scope=classify_scope(rel, category), size=len(data),
                      sha256=hashlib.sha256(data).hexdigest(),
                      lines=text.count("\n") + (0 if text.endswith("\n") or not text else 1))


def read_text(root: str | Path, rel: str) -> str:
    """A collected file's text (the same checks as collection: nothing outside the repository,
    no FIFO or device)."""
    return read_repo_file(root, rel).decode("utf-8")
