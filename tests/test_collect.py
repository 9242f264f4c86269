"""Collect stage: what gets indexed, what is skipped (and why), and how files are classified."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.settings import CollectSettings, Settings
from codeteacher.ingest.collect import classify_scope, collect
from codeteacher.ingest.stages import stage_collect

CODE = "int f() { return 1; }\n"


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def _paths(report) -> set[str]:
    return {f.path for f in report.files}


def test_gitignore_nested_and_configured_excludes(tmp_path):
    _tree(tmp_path, {
        ".gitignore": "*.gen.cpp\n/generated/\nscratch*\n",
        "src/a.cpp": CODE,
        "src/a.gen.cpp": CODE,                # root pattern, any depth
        "generated/x.cpp": CODE,              # anchored folder
        "src/generated/y.cpp": CODE,          # anchored pattern does not match deeper
        "scratch.h": CODE,
        "lib/.gitignore": "local_*.h\n!keep.h\nsub/\n",
        "lib/local_tmp.h": CODE,              # nested .gitignore, relative to lib/
        "lib/keep.h": CODE,
        "lib/sub/z.cpp": CODE,
        "other/local_tmp.h": CODE,            # lib's rules do not apply outside lib/
        "build/out.cpp": CODE,                # a CMake build tree: left out by content
        "build/CMakeCache.txt": "CMAKE_BUILD_TYPE:STRING=Release\n",
        "scripts/build/run_gnu.sh": "#!/bin/sh\ncmake ..\n",  # a tracked build/ folder stays
        "test/case1/.svn/text-base/README.svn-base": "# Case 1\n",
        "third_party/skip/t.cpp": CODE,       # exclude passed by the caller
        ".git/hooks/h.cpp": CODE,
    })
    report = collect(tmp_path, CollectSettings(), exclude=["third_party/"])
    # (the .gitignore files are text files of the repository, so they are indexed too)
    assert _paths(report) == {"src/a.cpp", "src/generated/y.cpp", "lib/keep.h",
                              "other/local_tmp.h", ".gitignore", "lib/.gitignore",
                              "scripts/build/run_gnu.sh"}
    # Nothing is left out silently: each exclusion is counted under the rule set that made it.
    assert report.skipped == {"excluded by .gitignore": 3, "excluded by .gitignore (folder)": 2,
                              "build tree (holds CMakeCache.txt) (folder)": 1,
                              "excluded by --exclude (folder)": 1,
                              "version control (.git folder) (folder)": 1,
                              "version control (.svn folder) (folder)": 1}


def test_gitignore_can_be_ignored_and_excludes_configured(tmp_path):
    _tree(tmp_path, {".gitignore": "*.gen.cpp\n", "a.gen.cpp": CODE, "b.cpp": CODE,
                     "vendor/v.cpp": CODE})
    settings = CollectSettings(respect_gitignore=False, exclude=["vendor/"])
    assert _paths(collect(tmp_path, settings)) == {"a.gen.cpp", "b.cpp", ".gitignore"}


def test_include_filter(tmp_path):
    _tree(tmp_path, {"src/a.cpp": CODE, "tests/t.cpp": CODE, "README.md": "# r\n"})
    assert _paths(collect(tmp_path, include=["src/"])) == {"src/a.cpp"}


def test_binary_non_utf8_and_oversized_are_skipped_with_reasons(tmp_path):
    _tree(tmp_path, {
        "ok.cpp": CODE,
        "blob.h": b"\x7fELF\x00\x00\x01binary",
        "latin.cpp": "// caf\xe9 na\xefve\nint g();\n".encode("latin-1"),
        "big.cpp": "// padding\n" * 200,
        "big_doc.md": "word " * 1000,
    })
    report = collect(tmp_path, CollectSettings(max_file_bytes=1000))
    assert _paths(report) == {"ok.cpp"}
    assert report.skipped == {"binary": 1, "not UTF-8": 1, "too large": 2}
    assert report.skipped_examples["not UTF-8"] == ["latin.cpp"]
    assert sorted(report.skipped_examples["too large"]) == ["big.cpp", "big_doc.md"]


@pytest.mark.timeout(120)  # guards against a hang, not a timing assertion
@pytest.mark.parametrize("follow", [False, True])
def test_symlink_loop_does_not_hang(tmp_path, follow):
    _tree(tmp_path, {"src/a.cpp": CODE, "src/inner/b.cpp": CODE})
    os.symlink("..", tmp_path / "src" / "inner" / "up")       # points to its parent
    os.symlink(".", tmp_path / "self")                         # points to itself
    report = collect(tmp_path, CollectSettings(follow_symlinks=follow))
    assert _paths(report) == {"src/a.cpp", "src/inner/b.cpp"}
    if follow:
        assert report.skipped.get("symlink loop", 0) >= 2


def test_followed_symlinked_folder_is_collected_once(tmp_path):
    _tree(tmp_path / "repo", {"real/a.cpp": CODE})
    os.symlink("real", tmp_path / "repo" / "alias")
    assert _paths(collect(tmp_path / "repo", CollectSettings(follow_symlinks=True))) in (
        {"real/a.cpp"}, {"alias/a.cpp"})
    assert _paths(collect(tmp_path / "repo")) == {"real/a.cpp"}


@pytest.mark.timeout(120)  # a FIFO read blocks forever: it must be skipped, not opened
@pytest.mark.parametrize("follow", [False, True])
def test_fifo_and_dangling_symlink_are_skipped(tmp_path, follow):
    _tree(tmp_path, {"ok.cpp": CODE})
    os.mkfifo(tmp_path / "pipe.cpp")
    os.symlink("nowhere.cpp", tmp_path / "ghost.cpp")
    report = collect(tmp_path, CollectSettings(follow_symlinks=follow))
    assert _paths(report) == {"ok.cpp"}
    assert report.skipped == {"not a regular file": 1, "broken symlink": 1}


def test_file_symlink_inside_repo_is_read(tmp_path):
    _tree(tmp_path, {"a.cpp": CODE})
    os.symlink("a.cpp", tmp_path / "b.cpp")
    assert _paths(collect(tmp_path)) == {"a.cpp", "b.cpp"}


def test_kinds_extensionless_docs_and_build_files(tmp_path):
    _tree(tmp_path, {
        "INSTALL": "Install with cmake.\n", "TUNING": "Tune the block size.\n",
        "docs/random": "not a known name\n", "LICENSE": "MIT\n", "Readme": "hello\n",
        "CMakeLists.txt": "project(x)\n", "cmake/FindFoo.cmake": "find_path(FOO foo.h)\n",
        "Makefile": "all:\n\ttrue\n", "src/k.cu": CODE, "src/c.c": CODE, "src/h.hpp": CODE,
        "src/k.hip": CODE, "docs/guide.rst": "Guide\n=====\n", "notes.txt": "x\n", "data.csv": "1,2\n",
        "doc/manual.tex": "\\section{Running}\nRun it.\n", "image.png": b"\x89PNG\r\n",
    })
    kinds = {f.path: (f.language, f.category) for f in collect(tmp_path).files}
    assert kinds == {
        "INSTALL": ("text", "doc"), "TUNING": ("text", "doc"), "Readme": ("text", "doc"),
        "CMakeLists.txt": ("cmake", "build"), "cmake/FindFoo.cmake": ("cmake", "build"),
        "Makefile": ("make", "build"), "src/k.cu": ("cuda", "code"), "src/c.c": ("c", "code"),
        "src/k.hip": ("hip", "code"),
        "src/h.hpp": ("cpp", "code"), "docs/guide.rst": ("rst", "doc"),
        "notes.txt": ("text", "doc"), "doc/manual.tex": ("latex", "doc"),
        # not known by name: text recognised by content, chunked as config/data windows
        "docs/random": ("text", "script"), "LICENSE": ("text", "script"),
        "data.csv": ("csv", "script"),
    }


@pytest.mark.parametrize("rel, category, scope", [
    ("src/solver.cpp", "code", "src"),
    ("include/lib/solver.hpp", "code", "src"),
    ("core/FieldSolver.h", "code", "src"),
    ("tests/test_solver.cpp", "code", "test"),
    ("unit_tests/io/reader.cpp", "code", "test"),
    ("unittesting/Geometry/main.cpp", "code", "test"),
    ("regression-tests/run.cpp", "code", "test"),
    ("contest/main.cpp", "code", "src"),
    ("unit_test/tstNeighbor.hpp", "code", "test"),
    ("src/tstIntegrator.hpp", "code", "test"),
    ("src/tstats.cpp", "code", "src"),
    ("src/solver_test.cpp", "code", "test"),
    ("src/SolverTest.cpp", "code", "test"),
    ("src/TestSolver.cpp", "code", "test"),
    ("src/latest.cpp", "code", "src"),
    ("src/Testing.cpp", "code", "src"),
    ("examples/heat/main.cpp", "code", "example"),
    ("benchmarks/bench_fft.cpp", "code", "example"),
    ("tutorials/step1.cpp", "code", "example"),
    ("CMakeLists.txt", "build", "build"),
    ("src/CMakeLists.txt", "build", "build"),
    ("tests/CMakeLists.txt", "build", "build"),
    ("cmake/FindFFTW.cmake", "build", "build"),
    ("README.md", "doc", "docs"),
    ("docs/design.rst", "doc", "docs"),
    ("doc/snippets/example.cpp", "code", "docs"),
    ("tests/README.md", "doc", "test"),
    ("examples/README.md", "doc", "example"),
])
def test_scope_from_generic_paths(rel, category, scope):
    assert classify_scope(rel, category) == scope


@pytest.mark.parametrize("rel,language,scope", [
    ("build.sh", "sh", "build"),
    ("configure", "python", "build"),          # extensionless, known by its shebang
    ("scripts/cmake_cuda.sh", "sh", "build"),
    ("mycodeconf.py", "py", "build"),
    ("tools/install-deps.bash", "bash", "build"),
    ("scripts/make_release.sh", "sh", "src"),  # a verb that opens any name: not by itself
    ("tools/compile_reader.py", "py", "src"),
    ("run.sh", "sh", "src"),
    ("tests/build.sh", "sh", "test"),          # the folder wins
    ("docs/conf.py", "py", "docs"),
    (".github/workflows/build.yml", "yml", "test"),  # CI workflow, not a build script
])
def test_a_script_that_drives_the_build_is_a_build_file(rel, language, scope):
    assert classify_scope(rel, "script", language, CollectSettings()) == scope


@pytest.mark.parametrize("rel,category,scope", [
    (".github/workflows/omp.yml", "script", "test"),
    (".travis.yml", "script", "test"),
    (".gitlab-ci.yml", "script", "test"),
    (".gitlab/ci/cluster.yml", "script", "test"),
    (".circleci/config.yml", "script", "test"),
    ("Jenkinsfile", "script", "test"),
    ("ci/scripts/test_runner.sh", "script", "test"),
    ("ci/README.md", "doc", "docs"),            # a document about the CI stays a document
    ("ci/Makefile", "build", "build"),          # a build file stays a build file
    ("src/ci/stats.cpp", "code", "src"),        # only a top-level ci/ is the CI folder
    ("src/circle.cpp", "code", "src"),
    ("docs/ci.md", "doc", "docs"),
])
def test_continuous_integration_configuration_is_test_scope(rel, category, scope):
    assert classify_scope(rel, category, "", CollectSettings()) == scope


def test_an_empty_ci_pattern_leaves_ci_files_to_their_paths():
    off = CollectSettings(ci_pattern="")
    assert classify_scope(".github/workflows/omp.yml", "script", "yml", off) == "src"
    assert classify_scope("ci/README.md", "doc", "", off) == "docs"


def test_build_scripts_are_collected_in_the_build_scope(tmp_path):
    _tree(tmp_path, {"build.sh": "#!/bin/sh\ncmake -B out .\n", "run.sh": "#!/bin/sh\n./a\n",
                     "configure": "#!/usr/bin/env python3\nprint('x')\n"})
    scopes = {f.path: f.scope for f in collect(tmp_path).files}
    assert scopes == {"build.sh": "build", "configure": "build", "run.sh": "src"}


def test_records_hash_size_lines_and_scope(tmp_path):
    files = {"src/a.cpp": "int a();\nint b();\n", "tests/t.cpp": "int t();", "INSTALL": ""}
    _tree(tmp_path, files)
    report = collect(tmp_path)
    assert report.root == str(tmp_path.resolve())
    by_path = {f.path: f for f in report.files}
    for rel, text in files.items():
        data = text.encode()
        rec = by_path[rel]
        assert rec.sha256 == hashlib.sha256(data).hexdigest()
        assert rec.size == len(data)
    assert by_path["src/a.cpp"].lines == 2 and by_path["tests/t.cpp"].lines == 1
    assert by_path["INSTALL"].lines == 0
    assert by_path["tests/t.cpp"].scope == "test" and by_path["src/a.cpp"].scope == "src"
    # Paths are repository-relative POSIX, sorted walk order is deterministic.
    assert [f.path for f in report.files] == [f.path for f in collect(tmp_path).files]


def test_bad_roots(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        collect(tmp_path / "absent")
    (tmp_path / "file.cpp").write_text(CODE)
    with pytest.raises(UserError, match="not a directory"):
        collect(tmp_path / "file.cpp")


def test_stage_collect_refuses_repository_without_indexable_files(tmp_path):
    _tree(tmp_path / "repo", {"image.png": b"\x89PNG", "empty.dat": "\n",
                              "bin.cpp": b"\x00\x01"})
    with pytest.raises(UserError, match="no indexable files"):
        stage_collect(tmp_path / "repo", tmp_path / "files.json", Settings())
    assert not (tmp_path / "files.json").exists()


def test_sample_app_is_collected_completely(minipic_src):
    """Every source, header, doc and build file of the sample app is indexed, nothing skipped."""
    report = collect(minipic_src)
    on_disk = {p.relative_to(minipic_src).as_posix() for p in minipic_src.rglob("*")
               if p.is_file() and (p.suffix in {".cpp", ".hpp", ".h", ".md", ".rst", ".cmake"}
                                   or p.name in {"CMakeLists.txt", "INSTALL", "README"})}
    assert on_disk <= _paths(report)
    assert report.skipped == {}
    scopes = {f.path: f.scope for f in report.files}
    assert scopes["src/deposit.cpp"] == "src"
    assert scopes["tests/test_cic.cpp"] == "test"
    assert scopes["apps/landau_damping.cpp"] == "example"
    assert scopes["include/minipic/pusher.hpp"] == "src"


@pytest.mark.parametrize("follow", [False, True])
def test_symlinks_out_of_the_repository_are_not_indexed(tmp_path, follow):
    _tree(tmp_path / "outside", {"secret.cpp": CODE, "lib/x.cpp": CODE})
    _tree(tmp_path / "repo", {"a.cpp": CODE})
    os.symlink(tmp_path / "outside" / "secret.cpp", tmp_path / "repo" / "link.cpp")
    os.symlink(tmp_path / "outside" / "lib", tmp_path / "repo" / "lib")
    report = collect(tmp_path / "repo", CollectSettings(follow_symlinks=follow))
    assert _paths(report) == {"a.cpp"}
    assert report.skipped["symlink out of the repository"] == (2 if follow else 1)


def test_every_text_file_is_indexed_and_every_other_file_counted(tmp_path):
    """Issue 16 item 6 / issue 12 item 3: templates, container files, licences, citations,
    input decks, presets and hooks are text files of the repository: indexed, classified by
    content; whatever is not indexed is counted with its reason."""
    licence = ("Permission is hereby granted, free of charge, to any person obtaining a copy\n"
               "of this software and associated documentation files, to deal in the Software\n"
               "without restriction, including without limitation the rights to use it.\n")
    _tree(tmp_path, {
        "config.h.in": "#cmakedefine HAVE_FFT\n#define VERSION \"@PROJECT_VERSION@\"\n",
        "cmake/Config.cmakein": "set(FOO_DIR \"@PACKAGE_DIR@\")\n",
        "cmake/Tools.cmake.in": "include(${CMAKE_CURRENT_LIST_DIR}/x.cmake)\n",
        "Dockerfile": "FROM debian:stable\nRUN apt-get update\n",
        "docker/Dockerfile.cuda": "FROM nvidia/cuda\n",
        "LICENSE": licence,
        "CITATION.bib": "@article{doe2020,\n  title = {A solver},\n  year = {2020}\n}\n",
        "inputs/tea.in": "*tea\nstate 1 density=100.0\n*endtea\n",
        "inputs/run.dat": "1 2 3\n4 5 6\n",
        "presets/small.json": "{\"n\": 8}\n",
        "hooks/pre-commit": "#!/usr/bin/env bash\nclang-format --dry-run *.cpp\n",
        "tools/run-it": "#!/usr/bin/python3\nprint('x')\n",
        "rust/lib.rs": "#![feature(allocator_api)]\npub fn triad() {}\n",
        "Makefile.intel": "CXX = icpx\nCXXFLAGS = -O3\n",
        "mk/rules.mk": "%.o: %.cpp\n\t$(CXX) -c $<\n",
        ".github/workflows/ci.yml": "on: push\n",
        "blob.data": b"\x00\x01\x02binary",
        "latin.dat": "caf\xe9\n".encode("latin-1"),
        "huge.dat": "0 " * 2000,
        "generated/out.txt": "x\n",
        ".gitignore": "generated/\n",
        "empty.cfg": "",
    })
    report = collect(tmp_path, CollectSettings(max_file_bytes=3000))
    kinds = {f.path: (f.language, f.category) for f in report.files}
    assert kinds["config.h.in"] == ("cpp", "code")  # a template is classified as what it makes
    assert kinds["cmake/Config.cmakein"][1] == "build"
    assert kinds["cmake/Tools.cmake.in"][1] == "build"
    assert kinds["Dockerfile"] == ("text", "script")
    assert kinds["docker/Dockerfile.cuda"] == ("cuda", "script")
    assert kinds["LICENSE"] == ("text", "doc")  # prose
    assert kinds["CITATION.bib"] == ("bib", "script")
    assert kinds["inputs/tea.in"] == ("in", "script")
    assert kinds["inputs/run.dat"] == ("dat", "script")
    assert kinds["presets/small.json"] == ("json", "script")
    assert kinds["hooks/pre-commit"] == ("bash", "script")  # shebang
    assert kinds["tools/run-it"] == ("python", "script")
    assert kinds["rust/lib.rs"] == ("rs", "script")  # "#![...]" is an attribute, not a shebang
    assert kinds["Makefile.intel"] == ("make", "build")  # a per-compiler make file
    assert kinds["mk/rules.mk"] == ("make", "build")
    assert kinds[".github/workflows/ci.yml"] == ("yml", "script")
    assert report.skipped == {"binary": 1, "not UTF-8": 1, "too large": 1, "empty": 1,
                              "excluded by .gitignore (folder)": 1}
    on_disk = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    counted = set(kinds) | {p for ex in report.skipped_examples.values() for p in ex}
    assert on_disk - counted == {"generated/out.txt"}  # inside the ignored folder, counted there
    assert report.skipped_examples["excluded by .gitignore (folder)"] == ["generated"]


def test_files_a_tool_says_it_wrote_are_generated_scope(tmp_path):
    _tree(tmp_path, {
        "configure": "#! /bin/sh\n# Guess values for system-dependent variables.\n"
                     "# Generated by GNU Autoconf 2.61 for ThreadPool 1.1d.\necho ok\n",
        "lib/Makefile.in": "# Makefile.in generated by automake 1.10 from Makefile.am.\nall:\n",
        "Cargo.lock": "# This file is automatically @generated by Cargo.\nversion = 3\n",
        # A template that says its *output* is generated, and a note further down, are source.
        "src/Version.h.in": "// Configuration and version information\n"
                            "// generated automatically - do not edit\n#define V \"@V@\"\n",
        "src/check.cpp": "\n" * 6 + "// compares the CSV generated by the bison run\n" + CODE,
    })
    scope = {f.path: f.scope for f in collect(tmp_path).files}
    assert scope["configure"] == scope["lib/Makefile.in"] == scope["Cargo.lock"] == "generated"
    assert scope["src/Version.h.in"] == scope["src/check.cpp"] == "src"
    off = CollectSettings(generated_marker="")
    assert "generated" not in {f.scope for f in collect(tmp_path, off).files}


def test_a_document_name_as_a_dotted_part_is_a_document(tmp_path):
    """"solver.README" or "INSTALL.unix": the document name is there, only the dot put it in
    the suffix. A banner and a table fail the prose test, so without the name these were data."""
    table = ("#BHEADER" + "*" * 60 + "\n" + "\n".join(f"  {i:4d} {i * i:8d} {i * 0.5:8.2f}"
                                                      for i in range(30)) + "\n")
    _tree(tmp_path, {"docs/solver.README": table, "INSTALL.unix": table,
                     "docs/results.dat": table, "tools/readme_tool.py": "print(1)\n",
                     "data/notes.csv": table})
    kinds = {f.path: (f.language, f.category) for f in collect(tmp_path).files}
    assert kinds["docs/solver.README"] == ("text", "doc")
    assert kinds["INSTALL.unix"] == ("text", "doc")
    assert kinds["docs/results.dat"] == ("dat", "script")  # no document name: data as before
    assert kinds["tools/readme_tool.py"] == ("py", "script")
    assert kinds["data/notes.csv"] == ("csv", "script")  # a lower-case word is only a name


def test_make_syntax_makes_a_build_file_whatever_its_name(tmp_path):
    """Make include files and per-platform make files carry no name a list could hold
    (make.inc.gcc, flags.makefile, make_targets, Make.Linux_MPI): their lines are make's. A
    parameter file of `key = value` lines, a shell run script and a Fortran include list are
    not, though each line alone could be."""
    _tree(tmp_path, {
        "src/make.inc.gcc": "# GNU compilers\nFC = gfortran\nFFLAGS = -O3 \\\n  -fopenmp\n"
                            "ifeq ($(DEBUG),yes)\n  FFLAGS += -g\nendif\n",
        "common/flags.makefile": "CXX ?= g++\nCXXFLAGS := -O2 $(EXTRA)\n",
        "ref/make_targets": "OBJS = a.o b.o\n\nall: prog.x\n\nprog.x: $(OBJS)\n"
                            "\t$(CXX) -o $@ $(OBJS)\n\nclean:\n\trm -f *.o\n",
        "problems/case.params": "nx = 64\nny = 64\ndt = 0.01\nend_time = 1.0\n",
        "common/make.defs.gcc": "VERSION=-14\nCC=gcc${VERSION} -std=c11\nCFLAGS+=-O3\n",
        # No make-only line, but the name says make; the same lines under another name are a
        # parameter file.
        "examples/make.inc.site": "USE_PETSC = 1\nPETSC_INC = -I/opt/petsc/include\n",
        "examples/site.inc": "USE_PETSC = 1\nPETSC_INC = -I/opt/petsc/include\n",
        "examples/run.local": "NUM=4\nexport OMP_NUM_THREADS=1\nmpirun -n $NUM ./sweep.x in\n",
        "examples/run.env": "OUT=${HOME}/runs\nmkdir -p ${OUT}\ncd ${OUT}\n./sweep.x in\n",
        "src/TOTAL": "      include 'SIZE'\n      include 'INPUT'\n",
    })
    kinds = {f.path: (f.language, f.category, f.scope) for f in collect(tmp_path).files}
    assert kinds["src/make.inc.gcc"] == ("make", "build", "build")
    assert kinds["common/flags.makefile"] == ("make", "build", "build")
    assert kinds["ref/make_targets"] == ("make", "build", "build")
    assert kinds["problems/case.params"] == ("params", "script", "src")  # no make-only line
    assert kinds["common/make.defs.gcc"] == ("make", "build", "build")
    assert kinds["examples/make.inc.site"] == ("make", "build", "build")
    assert kinds["examples/site.inc"] == ("inc", "script", "example")
    assert kinds["examples/run.local"][1] == "script"  # shell: $NUM, not $(NUM)
    assert kinds["examples/run.env"][1] == "script"  # ${OUT}, but its commands are no make
    assert kinds["src/TOTAL"][1] == "script"  # a quoted include is Fortran's or C's
    off = {f.path: f.category for f in collect(tmp_path, CollectSettings(make_min_share=2)).files}
    assert off["src/make.inc.gcc"] == off["ref/make_targets"] == "script"
