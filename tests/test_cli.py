"""The shells `codeteacher` and `ask`, run as real subprocesses.

Every bad input must end in one line `error: ...` on stderr and a non-zero exit, never a
traceback; the good paths print the documented JSON schema, the human answer and the build table.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
CODETEACHER = [str(BIN / "codeteacher")] if (BIN / "codeteacher").exists() else \
    [sys.executable, "-m", "codeteacher.shells.cli"]
ASK = [str(BIN / "ask")] if (BIN / "ask").exists() else \
    [sys.executable, "-c", "import sys; from codeteacher.shells.cli import ask_main; sys.exit(ask_main())"]
EVIDENCE_LINE = re.compile(r"^- (?P<path>\S+):(?P<start>\d+)-(?P<end>\d+) — (?P<symbol>.+?) — (?P<desc>.*)$")


def _env() -> dict:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", NO_COLOR="1", COLUMNS="200")
    for var in ("CODETEACHER_SETTINGS", "CODETEACHER_DEBUG", "CODETEACHER_INDEX"):
        env.pop(var, None)
    return env


def run(cmd: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    # cwd has no runtime_settings.json, so the defaults apply (as for the session index).
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout)


# ---- ask ---------------------------------------------------------------------------------------

BORIS = "Where is the Boris particle pusher?"
CIC = "Where is the cloud-in-cell charge deposition implemented?"


@pytest.fixture(scope="module")
def ask_runs(tmp_path_factory, minipic_index):
    """The three ask modes, started together (each loads the embedding model)."""
    tmp = tmp_path_factory.mktemp("cli_ask")
    qfile = tmp / "questions.json"
    qfile.write_text(json.dumps({"questions": [
        {"id": "cic", "question": CIC},
        {"id": 7, "question": "Which class solves Poisson's equation with an FFT?"}]}))
    idx = str(minipic_index)
    commands = {
        "json": ASK + ["--index", idx, "--json", BORIS],
        "batch": ASK + ["--questions", str(qfile), "--index", idx, "--json"],
        "human": ASK + ["--index", idx, CIC],
    }
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {k: pool.submit(run, cmd, tmp) for k, cmd in commands.items()}
    return {k: f.result() for k, f in futures.items()}


def test_ask_json_schema(ask_runs):
    proc = ask_runs["json"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert {"question", "answer", "evidence", "papers", "timings_ms"} <= set(data)
    assert data["question"] == BORIS
    assert isinstance(data["answer"], str) and data["answer"]
    assert isinstance(data["papers"], list) and isinstance(data["timings_ms"], dict)
    assert data["evidence"]
    for e in data["evidence"]:
        assert {"path", "start_line", "end_line", "symbol", "kind", "score"} <= set(e)
        assert isinstance(e["path"], str) and isinstance(e["symbol"], str)
        assert isinstance(e["start_line"], int) and isinstance(e["end_line"], int)
        assert 1 <= e["start_line"] <= e["end_line"]
        assert isinstance(e["score"], (int, float)) and isinstance(e["kind"], str)
    assert "include/minipic/pusher.hpp" in {e["path"] for e in data["evidence"]}
    assert "Traceback" not in proc.stderr


def test_ask_batch_mode_prints_one_json_object_per_question(ask_runs):
    proc = ask_runs["batch"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 2
    objs = [json.loads(ln) for ln in lines]
    assert [o["id"] for o in objs] == ["cic", "7"]  # ids are text, as in `codeteacher eval`
    assert objs[0]["question"] == CIC
    for o in objs:
        assert {"question", "answer", "evidence", "papers", "timings_ms"} <= set(o)
        assert o["evidence"] and {"path", "start_line", "end_line", "symbol", "kind",
                                  "score"} <= set(o["evidence"][0])


def test_ask_human_output(ask_runs, minipic_index):
    proc = ask_runs["human"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout.splitlines()
    assert f"Q: {CIC}" in out
    assert any(ln.startswith("Answer: ") and len(ln) > len("Answer: ") for ln in out)
    start = out.index("Evidence:")
    evidence = [EVIDENCE_LINE.match(ln) for ln in out[start + 1:] if ln.startswith("- ")]
    assert evidence and all(evidence), out[start:]
    manifest = json.loads((minipic_index / "manifest.json").read_text())
    for m in evidence:
        assert m["path"] in manifest["files"]
        assert int(m["start"]) <= int(m["end"]) and m["symbol"].strip()
    assert "src/deposit.cpp" in {m["path"] for m in evidence}
    assert "Traceback" not in proc.stderr


def test_code_in_question_is_not_read_as_markup(minipic_index, tmp_path, monkeypatch, capsys):
    """Rich markup must not eat `data[n]` or choke on `[/bold]` in a question or answer."""
    from codeteacher.shells.cli import ask_main

    monkeypatch.chdir(tmp_path)
    q = "What does rho(st.i, st.j, st.k)[n] [/bold] mean in depositChargeCIC?"
    assert ask_main(["--index", str(minipic_index), q]) == 0
    out = capsys.readouterr().out
    assert f"Q: {q}" in out and "Answer:" in out


# ---- index -------------------------------------------------------------------------------------

def _messy_repo(root: Path) -> Path:
    """A repository with one good file and every kind of file that must be skipped."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "heat.cpp").write_text(
        "// heat.cpp -- explicit heat equation step.\n"
        "double heatStep(double u, double k) { return u + k * (1.0 - 2.0 * u); }\n")
    (root / "src" / "latin1.cpp").write_bytes("// r\xe9sum\xe9\nint f();\n".encode("latin-1"))
    (root / "src" / "huge.cpp").write_text("// filler line for a huge file\n" * 200)
    (root / "src" / "blob.h").write_bytes(b"\x00\x01\x02binary")
    os.symlink("missing.cpp", root / "src" / "dangling.cpp")    # unreadable: target is gone
    os.mkfifo(root / "src" / "pipe.cpp")                         # would block a reader forever
    os.symlink("..", root / "src" / "loop")                      # a folder loop
    return root


@pytest.mark.timeout(900)  # guards against hangs (FIFO, symlink loop), not a timing assertion
def test_index_skips_bad_files_and_prints_the_closing_table(tmp_path):
    repo = _messy_repo(tmp_path / "repo")
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"collect": {"max_file_bytes": 2000, "follow_symlinks": True}}))
    out = tmp_path / "index"
    proc = run(CODETEACHER + ["index", str(repo), "--out", str(out), "--name", "messy",
                              "--settings", str(settings), "-q"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    table = proc.stdout
    assert "index 'messy'" in table
    for row in ("files", "skipped: not UTF-8", "skipped: too large", "skipped: binary",
                "skipped: broken symlink", "skipped: not a regular file",
                "skipped: symlink loop", "files parsed / reused", "vectors embedded / reused",
                "unresolved calls / includes", "seconds: total", "chunks: function"):
        assert row in table, row
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["files"]) == ["src/heat.cpp"]

    # Unchanged rebuild, JSON report: nothing parsed or embedded again.
    again = run(CODETEACHER + ["index", str(repo), "--out", str(out), "--name", "messy",
                               "--settings", str(settings), "--json", "-q"], tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    report = json.loads(again.stdout)
    assert report["files"] == 1 and report["parsed"] == 0 and report["embedded"] == 0
    assert report["skipped"] == {"not UTF-8": 1, "too large": 1, "binary": 1,
                                 "broken symlink": 1, "not a regular file": 1,
                                 "symlink loop": 1}


# ---- errors ------------------------------------------------------------------------------------

def _error_cases(tmp: Path, index: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (command, text the error line must contain)."""
    good = tmp / "good"
    (good / "src").mkdir(parents=True)
    (good / "src" / "a.cpp").write_text("int a() { return 1; }\n")
    empty = tmp / "empty"
    empty.mkdir()
    (empty / "logo.png").write_bytes(b"\x89PNG\r\n")
    (empty / "notes.csv").write_text("")  # (a text file with content would be indexed)
    only_bad = tmp / "only_bad"
    only_bad.mkdir()
    os.symlink("gone.cpp", only_bad / "dangling.cpp")
    (only_bad / "latin1.cpp").write_bytes(b"caf\xe9\n")
    regular = tmp / "regular.txt"
    regular.write_text("a plain file\n")
    bad_key = tmp / "bad_key.json"
    bad_key.write_text(json.dumps({"retrieval": {"k": 3, "top_k": 5}}))
    bad_nested = tmp / "bad_nested.json"
    bad_nested.write_text(json.dumps({"papers": {"online": {"enable": True}}}))
    bad_type = tmp / "bad_type.json"
    bad_type.write_text(json.dumps({"collect": {"max_file_bytes": "big"}}))
    bad_json = tmp / "bad.json"
    bad_json.write_text("{\"questions\": [")
    bad_shape = tmp / "shape.json"
    bad_shape.write_text(json.dumps({"questions": [{"question": "no id"}]}))
    bad_list = tmp / "list.json"
    bad_list.write_text(json.dumps(["Where is main?"]))

    def corrupt(name: str, damage) -> str:
        copy = tmp / f"index_{name}"
        shutil.copytree(index, copy)
        damage(copy)
        return str(copy)

    def truncate(p: Path) -> None:
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])

    idx = str(index)
    q = "Where is the deposit?"
    return {
        "index-missing-path": (CODETEACHER + ["index", str(tmp / "absent"), "--out",
                                              str(tmp / "o1")], "does not exist"),
        "index-path-is-a-file": (CODETEACHER + ["index", str(regular), "--out", str(tmp / "o2")],
                                 "not a directory"),
        "index-empty-repository": (CODETEACHER + ["index", str(empty), "--out", str(tmp / "o3")],
                                   "no indexable files"),
        "index-only-unreadable-files": (CODETEACHER + ["index", str(only_bad), "--out",
                                                       str(tmp / "o4")], "no indexable files"),
        "index-output-under-a-file": (CODETEACHER + ["index", str(good), "--out",
                                                     str(regular / "index")], "not writable"),
        "index-output-is-a-file": (CODETEACHER + ["index", str(good), "--out", str(regular)],
                                   "not a folder"),
        "index-output-is-foreign-folder": (CODETEACHER + ["index", str(good), "--out",
                                                          str(good / "src")], "refusing"),
        "index-unknown-setting": (CODETEACHER + ["index", str(good), "--out", str(tmp / "o5"),
                                                 "--settings", str(bad_key)], "retrieval.top_k"),
        "index-unknown-nested-setting": (CODETEACHER + ["index", str(good), "--settings",
                                                        str(bad_nested)], "papers.online.enable"),
        "index-wrong-setting-type": (CODETEACHER + ["index", str(good), "--settings",
                                                    str(bad_type)], "collect.max_file_bytes"),
        "index-missing-settings-file": (CODETEACHER + ["index", str(good), "--settings",
                                                       str(tmp / "nope.json")], "not found"),
        "ask-missing-index": (ASK + ["--index", str(tmp / "no_index"), q], "no index"),
        "ask-not-an-index": (ASK + ["--index", str(good), q], "not a codeteacher index"),
        "ask-corrupt-manifest": (ASK + ["--index", corrupt("manifest", lambda d: (
            d / "manifest.json").write_text("{oops")), q], "manifest.json"),
        "ask-corrupt-faiss": (ASK + ["--index", corrupt("faiss", lambda d: (
            d / "faiss.index").write_bytes(b"\x00" * 64)), q], "corrupt index"),
        "ask-truncated-records": (ASK + ["--index", corrupt("records", lambda d: truncate(
            d / "records.jsonl")), q], "records.jsonl"),
        "ask-question-file-not-json": (ASK + ["--questions", str(bad_json), "--index", idx],
                                       "not valid JSON"),
        "ask-question-file-wrong-shape": (ASK + ["--questions", str(bad_shape), "--index", idx],
                                          "a question file looks like"),
        "ask-question-file-a-list": (ASK + ["--questions", str(bad_list), "--index", idx],
                                     "a question file looks like"),
        "ask-question-file-missing": (ASK + ["--questions", str(tmp / "none.json"), "--index",
                                             idx], "not found"),
        "ask-no-question": (ASK + ["--index", idx], "QUESTION"),
        "ask-empty-question": (ASK + ["--index", idx, "  "], "empty"),
        "ask-unknown-setting": (ASK + ["--index", idx, "--settings", str(bad_key), q],
                                "retrieval.top_k"),
        "ask-via-codeteacher-missing-index": (CODETEACHER + ["ask", "--index",
                                                             str(tmp / "nowhere"), q], "no index"),
    }


@pytest.fixture(scope="module")
def error_runs(tmp_path_factory, minipic_index):
    tmp = tmp_path_factory.mktemp("cli_errors")
    cases = _error_cases(tmp, minipic_index)
    assert sorted(cases) == sorted(ERROR_NAMES)
    # Independent processes: run a few at once to keep the suite short.
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run, cmd, tmp, 300) for name, (cmd, _) in cases.items()}
    return tmp, {name: (f.result(), cases[name][1]) for name, f in futures.items()}


ERROR_NAMES = [
    'index-missing-path',
    'index-path-is-a-file',
    'index-empty-repository',
    'index-only-unreadable-files',
    'index-output-under-a-file',
    'index-output-is-a-file',
    'index-output-is-foreign-folder',
    'index-unknown-setting',
    'index-unknown-nested-setting',
    'index-wrong-setting-type',
    'index-missing-settings-file',
    'ask-missing-index',
    'ask-not-an-index',
    'ask-corrupt-manifest',
    'ask-corrupt-faiss',
    'ask-truncated-records',
    'ask-question-file-not-json',
    'ask-question-file-wrong-shape',
    'ask-question-file-a-list',
    'ask-question-file-missing',
    'ask-no-question',
    'ask-empty-question',
    'ask-unknown-setting',
    'ask-via-codeteacher-missing-index',
]


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_bad_input_gives_one_line_error(error_runs, name):
    tmp, runs = error_runs
    proc, expected = runs[name]
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and expected in lines[0], lines[0]


def test_failed_builds_leave_no_scratch_folders(error_runs):
    tmp, _ = error_runs
    assert not [p.name for p in tmp.iterdir() if ".building-" in p.name or ".old-" in p.name]
    assert not any((tmp / f"o{i}").exists() for i in range(1, 6))


# ---- our own modules are never optional --------------------------------------------------------

def test_every_subcommand_is_registered():
    from codeteacher.shells.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert {"index", "demo", "ask", "stage", "serve", "mcp-config", "eval", "papers"} <= \
        set(sub.choices)


@pytest.mark.parametrize("module", ["codeteacher.papers.cli", "codeteacher.shells.serve"])
def test_a_broken_import_of_our_own_fails_loudly(tmp_path, module):
    """An import error in our package is a failure, not a quietly missing subcommand."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"  # what a broken install looks like
            "from codeteacher.shells.cli import main\nsys.exit(main(['--help']))\n")
    proc = run([sys.executable, "-c", code], tmp_path, timeout=120)
    assert proc.returncode != 0 and re.search(r"(Import|ModuleNotFound)Error", proc.stderr), \
        proc.stderr[-500:]
