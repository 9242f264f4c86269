"""Issue 16: no request can freeze the server, no working directory can redirect it, nothing
is dropped silently. Each defect of the issue has a test here (or in test_collect.py) that
failed on the code before the fix, with real parts: the SDK's client, a real server over
Streamable HTTP on a loopback address and over stdio, the MCP Inspector CLI where Node has it,
and a fuzz run of random tool calls against the live server.

Server start-up loads torch and the embedding model, so one HTTP server is shared by most
tests; the shutdown tests start their own.
"""
from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from codeteacher import __version__  # noqa: E402
from codeteacher.contracts.errors import UserError  # noqa: E402

SERVER_START_S = 600  # a deadline for start-up on a loaded machine, not a speed assertion
CALL_LIMIT_S = 60.0  # limits.tool_timeout_s (default) ...
REPLY_SLACK_S = 30.0  # ... plus transport and scheduling on a shared 2-core machine
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
ENV.pop("CODETEACHER_SETTINGS", None)
if ENV.get("PYTHONPATH"):  # servers run in other folders: a relative entry would miss
    ENV["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in
                                        ENV["PYTHONPATH"].split(os.pathsep) if p)


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _can_bind(host: str) -> bool:
    try:
        _free_port(host)
        return True
    except OSError:
        return False


LOOPBACK2 = "127.0.0.2" if _can_bind("127.0.0.2") else "127.0.0.1"


def run(coro):
    return asyncio.run(coro)


def ok(res) -> dict:
    assert not res.is_error, res.content[0].text if res.content else res
    return res.structured_content


def err(res) -> str:
    assert res.is_error, res.structured_content
    return res.content[0].text


@contextlib.asynccontextmanager
async def session_at(url: str, headers: dict | None = None):
    async with create_mcp_http_client(headers=headers or {}) as client:
        async with streamable_http_client(url, http_client=client) as (r, w):
            async with ClientSession(r, w) as s:
                init = await s.initialize()
                s.server_version = init.server_info.version
                yield s


def _start_server(args: list[str], cwd: Path, log: Path, env: dict | None = None):
    fh = open(log, "wb")
    proc = subprocess.Popen([sys.executable, "-m", "codeteacher.shells.cli", "serve", *args],
                            cwd=cwd, env=env or ENV, stdout=fh, stderr=subprocess.STDOUT)
    proc._log = fh  # closed by _stop
    return proc


def _wait_http(proc, url: str, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + SERVER_START_S
    while True:
        if proc.poll() is not None:
            pytest.fail("MCP server exited: " + log.read_text()[-3000:])
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                pytest.fail("MCP server did not start: " + log.read_text()[-3000:])
            time.sleep(0.5)


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc._log.close()


class _Listener:
    """An HTTP listener on 127.0.0.1 that records every request (an "LLM endpoint" that a
    settings file in an untrusted folder would point the server at)."""

    def __init__(self):
        seen = self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                seen.append((self.path, dict(self.headers), body))
                self.send_response(500)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


# ---- fixtures ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hard_index(tmp_path_factory, minipic_src, minipic_index, default_settings):
    """A copy of the sample app with a few extra files, indexed as 'hard' (the sample app's
    index is the cache, so only the new files are embedded)."""
    from codeteacher.ingest.build import build_index

    base = tmp_path_factory.mktemp("hard")
    repo = base / "repo"
    shutil.copytree(minipic_src, repo)
    (repo / "src" / "blank_tail.cpp").write_text("int blankTail();\n\n\n")
    (repo / "src" / "form_feed.cpp").write_text("int a;\n\x0c\n"
                                                "int formFeedAfter() { return 1; }\n")
    (repo / "src" / "becomes_fifo.hpp").write_text("int becomesFifo();\n")
    (repo / "src" / "becomes_link.hpp").write_text("int becomesLink();\n")
    index = base / "index"
    shutil.copytree(minipic_index, index)
    build_index(repo, out=index, name="hard", settings=default_settings)
    return repo, index


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory, minipic_index):
    """`codeteacher demo` as documented (its paper library is written beside the index)."""
    from codeteacher.shells.cli import main

    work = tmp_path_factory.mktemp("demo")
    out = work / "embeddings" / "minipic"
    shutil.copytree(minipic_index, out)  # the demo's own build then finds it up to date
    cwd = os.getcwd()
    os.chdir(work)
    try:
        assert main(["demo", "--out", str(out), "--questions", "0"]) == 0
    finally:
        os.chdir(cwd)
    assert (work / "embeddings" / "minipic-papers.sqlite").is_file()
    return out


@pytest.fixture(scope="module")
def listener():
    lst = _Listener()
    yield lst
    lst.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_index, hard_index, listener):
    """(url, proc) of a server on a loopback address other than 127.0.0.1 where possible,
    serving the demo index and 'hard', started (no --settings) inside a folder whose
    runtime_settings.json would send answers, code and a secret to the listener."""
    evil = tmp_path_factory.mktemp("untrusted-repo")
    (evil / "runtime_settings.json").write_text(json.dumps({"generation": {"answers": {
        "backend": "openai", "base_url": f"http://127.0.0.1:{listener.port}/v1",
        "api_key_env": "CT_TEST_SECRET", "retries": 0}}}))
    port = _free_port(LOOPBACK2)
    log = evil / "server.log"
    env = {**ENV, "CT_TEST_SECRET": "s3cret-value"}
    proc = _start_server(["--transport", "http", "--host", LOOPBACK2, "--port", str(port),
                          "--index", str(demo_index), "--index", str(hard_index[1])],
                         cwd=evil, log=log, env=env)
    url = f"http://{LOOPBACK2}:{port}/mcp"
    try:
        _wait_http(proc, url, log)
        yield url, proc
    finally:
        _stop(proc)


# ---- 1. bounded work: linear patterns, length limits, off the event loop -------------------

_OLD_FILEISH = re.compile(r"[\w][\w./+-]*\.[A-Za-z][A-Za-z0-9]{0,5}\b")


def test_file_name_pattern_matches_the_old_one():
    from codeteacher.retrieval.query import file_names

    rng = random.Random(7)
    alphabet = "ab._/+-1 Zé,\t`:("
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert file_names(text) == [m.group(0) for m in _OLD_FILEISH.finditer(text)], text
    assert file_names("see src/foo.cpp and CMakeLists.txt.") == ["src/foo.cpp",
                                                                 "CMakeLists.txt"]


@pytest.mark.timeout(300)  # the old pattern needs hours on a 1 MB token
def test_query_analysis_is_linear_on_1mb_inputs(engine):
    from codeteacher.retrieval.query import analyze

    rng = random.Random(3)
    b64 = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                  for _ in range(1 << 20))
    inputs = {"word run": "a" * (1 << 20), "base64": b64, "dots": "a." * (1 << 19),
              "ext runs": "a.b" * 350_000, "backticks": "`a" * (1 << 19),
              "qualified": "a::" * 350_000, "calls": "f (" * 350_000,
              "words": "where is the file defined " * 40_000}
    for name, text in inputs.items():
        t0 = time.perf_counter()
        analyze(text, engine.store)
        assert time.perf_counter() - t0 < 60, name  # linear: ~1 s; quadratic: hours


def test_engine_refuses_over_long_text(engine):
    lim = engine.settings.limits
    for call in (lambda: engine.search("x" * (lim.max_question_chars + 1)),
                 lambda: engine.ask("word " * lim.max_question_chars),
                 lambda: engine.get_code("a/" * lim.max_path_chars),
                 lambda: engine.find_symbol("s" * (lim.max_symbol_chars + 1))):
        with pytest.raises(UserError, match="too long") as exc:
            call()
        assert len(str(exc.value)) < 200


def test_offloaded_calls_have_a_time_limit_and_leave_the_loop_free():
    """The tool wrapper the server uses: a body past its limit is answered with an error,
    and other calls are served meanwhile (the body runs in a worker thread)."""
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    from codeteacher.shells.mcp_strict import offloaded

    def slow():
        time.sleep(3)
        return "late"

    def fast():
        return "fast"

    slow_call = offloaded(slow, timeout_s=0.3, threads=2)
    fast_call = offloaded(fast, timeout_s=5, threads=2)

    async def go():
        out = {}

        async def first():
            t0 = time.perf_counter()
            try:
                await slow_call()
            except ToolError as exc:
                out["slow"] = (str(exc), time.perf_counter() - t0)

        async def second():
            await anyio.sleep(0.05)
            t0 = time.perf_counter()
            out["fast"] = (await fast_call(), time.perf_counter() - t0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            tg.start_soon(second)
        return out

    out = anyio.run(go)
    assert "took longer than 0.3 s" in out["slow"][0] and out["slow"][1] < 2.5
    assert out["fast"][0] == "fast" and out["fast"][1] < 2.5


@pytest.mark.timeout(600)
def test_server_answers_others_while_a_huge_input_is_refused(server):
    url, proc = server

    async def go():
        async with session_at(url) as s:
            big = "A" * (1 << 20)
            t0 = time.perf_counter()
            huge, listed = await asyncio.gather(
                s.call_tool("search_code", {"query": big}), s.call_tool("list_indexes", {}))
            return err(huge), ok(listed), time.perf_counter() - t0

    message, listed, seconds = run(go())
    assert "at most 4000 characters" in message and len(message) <= 400
    assert listed["indexes"] and seconds < REPLY_SLACK_S
    assert proc.poll() is None


# ---- 2. settings: never from the working directory; off-machine needs an opt-in ------------

def test_server_ignores_settings_in_its_working_directory(server, listener):
    url, _ = server

    async def go():
        async with session_at(url) as s:
            answer = ok(await s.call_tool("ask", {"question": "Where is the charge deposited?"}))
            return answer, ok(await s.call_tool("index_status", {}))

    answer, status = run(go())
    assert answer["backend"] == "none" and answer["evidence"]
    assert listener.requests == []  # no code, no secret left for the listener
    assert status["settings_source"].endswith("settings.json")
    assert Path(status["settings_source"]).parent == Path(status["path"])  # the index's own
    assert status["off_machine"] == []


def test_settings_sources_and_paths(tmp_path, monkeypatch, minipic_index):
    from codeteacher.contracts.settings import load_settings
    from codeteacher.contracts.settings.sources import served_settings

    monkeypatch.delenv("CODETEACHER_SETTINGS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "runtime_settings.json").write_text(json.dumps({"retrieval": {"k": 7}}))
    monkeypatch.chdir(cwd)
    index = tmp_path / "embeddings" / "idx"
    shutil.copytree(minipic_index, index)
    recorded = index / "settings.json"
    assert recorded.is_file()  # written by the build
    # serve: the index's recorded settings, not ./runtime_settings.json
    assert served_settings(index).retrieval.k != 7
    assert served_settings(index).source == str(recorded)
    recorded.unlink()
    assert served_settings(index).retrieval.k != 7  # defaults; a default library lies beside
    assert served_settings(index).papers.library == str(tmp_path / "embeddings" /
                                                        "papers.sqlite")
    user = tmp_path / "config" / "codeteacher" / "runtime_settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"retrieval": {"k": 4}, "papers": {"library": "lib.sqlite"}}))
    assert served_settings(index).retrieval.k == 4
    assert served_settings(index).papers.library == str(user.parent / "lib.sqlite")
    explicit = tmp_path / "conf" / "mine.json"
    explicit.parent.mkdir()
    explicit.write_text(json.dumps({"retrieval": {"k": 3}, "papers": {"library": "p.sqlite"}}))
    s = served_settings(index, explicit)
    assert s.retrieval.k == 3 and s.papers.library == str(explicit.parent / "p.sqlite")
    # the plain CLI still reads ./runtime_settings.json, its paths relative to the file
    assert load_settings().retrieval.k == 7


def test_off_machine_settings_need_an_opt_in(tmp_path, minipic_index):
    from codeteacher.contracts.settings import Settings
    from codeteacher.contracts.settings.sources import off_machine, require_opt_in

    remote = Settings.model_validate({"generation": {"answers": {
        "backend": "openai", "base_url": "https://llm.example.org/v1"}}})
    local = Settings.model_validate({"generation": {"answers": {
        "backend": "openai", "base_url": "http://[::1]:8080/v1"}}})
    online = Settings.model_validate({"papers": {"online": {"enabled": True}}})
    assert off_machine(Settings()) == [] and off_machine(local) == []
    assert "llm.example.org" in off_machine(remote)[0] and off_machine(online)
    with pytest.raises(UserError, match="--allow-remote"):
        require_opt_in(remote, False)
    assert require_opt_in(remote, True)
    f = tmp_path / "remote.json"
    f.write_text(remote.model_dump_json())
    for cmd in (["serve", "--index", str(minipic_index), "--settings", str(f)],
                ["ask", "where?", "--index", str(minipic_index), "--settings", str(f)]):
        r = subprocess.run([sys.executable, "-m", "codeteacher.shells.cli", *cmd], env=ENV,
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert r.returncode != 0 and "--allow-remote" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_mcp_config_pins_absolute_index_and_settings(tmp_path, monkeypatch, minipic_index,
                                                     capsys):
    from codeteacher.shells.cli import main

    shutil.copytree(minipic_index, tmp_path / "idx")
    (tmp_path / "s.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert main(["mcp-config", "--index", "idx", "--settings", "s.json"]) == 0
    args = json.loads(capsys.readouterr().out)["mcpServers"]["codeteacher"]["args"]
    assert args[args.index("--index") + 1] == str(tmp_path / "idx")
    assert args[args.index("--settings") + 1] == str(tmp_path / "s.json")


# ---- 3. DNS rebinding on every loopback address --------------------------------------------

def test_allow_lists_follow_the_bound_address():
    from codeteacher.shells.serve import transport_security

    for host, good, bad in [
            ("127.0.0.2", ["127.0.0.2:9000"], ["evil.example:9000", "127.0.0.1:9000",
                                               "127.0.0.2:9001"]),
            ("0:0:0:0:0:0:0:1", ["[::1]:9000", "[0:0:0:0:0:0:0:1]:9000", "localhost:9000"],
             ["evil.example:9000", "[::2]:9000"]),
            ("localhost", ["localhost:9000", "127.0.0.1:9000", "[::1]:9000"],
             ["evil.example:9000"])]:
        ts = transport_security(host, 9000)
        assert ts.enable_dns_rebinding_protection
        assert all(h in ts.allowed_hosts for h in good), (host, ts.allowed_hosts)
        assert not any(h in ts.allowed_hosts for h in bad), (host, ts.allowed_hosts)
        assert all(o.startswith("http://") for o in ts.allowed_origins)


def test_foreign_host_and_origin_refused_on_another_loopback_address(server):
    import httpx

    url, _ = server
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}
    head = {"accept": "application/json, text/event-stream"}
    assert httpx.post(url, json=body, headers={**head, "host": "evil.example"},
                      timeout=30).status_code == 421
    assert httpx.post(url, json=body, headers={**head, "origin": "http://evil.example"},
                      timeout=30).status_code == 403
    assert httpx.post(url, json=body, headers=head, timeout=30).status_code == 200


# ---- 4. the demo's paper library is the one serve uses -------------------------------------

def test_paper_tools_find_the_demo_library(server):
    url, _ = server

    async def go():
        async with session_at(url) as s:
            found = ok(await s.call_tool("search_papers", {"query": "particle in cell"}))
            key = found["papers"][0]["key"]
            details = ok(await s.call_tool("paper_details", {"ref": key}))
            links = ok(await s.call_tool("link_papers_to_code",
                                         {"path_or_symbol": "depositChargeCIC"}))
            return found, details, links

    found, details, links = run(go())
    assert found["papers"] and details["title"]
    assert isinstance(links["papers"], list)


# ---- 5. special files never hang a call ----------------------------------------------------

@pytest.mark.timeout(600)
def test_fifo_and_outside_symlink_do_not_hang(server, hard_index, tmp_path):
    url, _ = server
    repo, _ = hard_index
    fifo = repo / "src" / "becomes_fifo.hpp"
    fifo.unlink()
    os.mkfifo(fifo)
    outside = tmp_path / "outside.hpp"
    outside.write_text("int becomesLink();\n")  # same content: a hash would call it fresh
    link = repo / "src" / "becomes_link.hpp"
    link.unlink()
    link.symlink_to(outside)

    async def go():
        async with session_at(url) as s:
            with anyio_fail_after(120):  # before the fix: blocked forever in open()
                code = err(await s.call_tool("get_code", {"path": "src/becomes_fifo.hpp",
                                                          "index": "hard"}))
                linked = err(await s.call_tool("get_code", {"path": "src/becomes_link.hpp",
                                                            "index": "hard"}))
                status = ok(await s.call_tool("index_status", {"index": "hard"}))
            return code, linked, status

    code, linked, status = run(go())
    assert "not a regular file" in code
    assert "out of the repository" in linked
    assert status["refused_files"] == {"src/becomes_fifo.hpp": "not a regular file",
                                       "src/becomes_link.hpp": "symlink out of the repository"}
    assert "src/becomes_link.hpp" not in status["stale_files"]


def anyio_fail_after(seconds):
    import anyio

    return anyio.fail_after(seconds)


# ---- 7. scratch folders of dead builds are removed -----------------------------------------

def test_stale_scratch_folders_are_removed(tmp_path):
    from codeteacher.ingest.build import _host, clean_stale_scratch

    out = tmp_path / "embeddings" / "x"
    out.parent.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = [out.parent / f".x.building-{_host()}-{dead.pid}",
             out.parent / f".x.building-{dead.pid}"]  # (the old name, without host)
    live = out.parent / f".x.building-{_host()}-{os.getppid()}"
    other_host = out.parent / f".x.building-otherhost-{dead.pid}"
    for p in (*stale, live, other_host):
        p.mkdir()
        (p / "chunks.jsonl").write_text("{}\n")
    removed = clean_stale_scratch(out)
    assert sorted(removed) == sorted(stale)
    assert live.is_dir() and other_host.is_dir() and not any(p.exists() for p in stale)


@pytest.mark.timeout(600)
def test_build_killed_with_sigkill_leaves_nothing_behind_after_the_next_build(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.cpp").write_text("int a() { return 1; }\n")
    (repo / "run.deck").write_text("steps 10\n")
    (repo / "blob.o").write_bytes(b"\x7fELF\x00\x00")
    (repo / ".gitignore").write_text("out/\n")
    (repo / "out").mkdir()
    (repo / "out" / "log.txt").write_text("x\n")
    out = tmp_path / "embeddings" / "r"
    cmd = [sys.executable, "-m", "codeteacher.shells.cli", "index", str(repo), "--out", str(out),
           "-q"]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + SERVER_START_S
    while not list(out.parent.glob(".r.building-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert list(out.parent.glob(".r.building-*")), "the build never started"
    r = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=SERVER_START_S)
    assert r.returncode == 0, r.stderr
    assert not list(out.parent.glob(".r.building-*")) and (out / "manifest.json").is_file()
    # `codeteacher index` prints what it left out, with reasons (issue 16 item 6)
    for row in ("skipped: binary", "skipped: excluded by .gitignore (folder)"):
        assert row in r.stdout, r.stdout
    assert "run.deck" in json.loads((out / "manifest.json").read_text())["files"]


# ---- 8. smaller: line ranges, bounded one-line errors, strict schemas, version -------------

def test_get_code_keeps_trailing_blank_lines_and_index_line_numbers(server, hard_index):
    url, _ = server

    async def go():
        async with session_at(url) as s:
            whole = ok(await s.call_tool("get_code", {"path": "src/blank_tail.cpp",
                                                      "index": "hard"}))
            tail = ok(await s.call_tool("get_code", {"path": "src/blank_tail.cpp",
                                                     "start_line": 2, "end_line": 3,
                                                     "index": "hard"}))
            ff = ok(await s.call_tool("get_code", {"path": "src/form_feed.cpp",
                                                   "start_line": 3, "end_line": 3,
                                                   "index": "hard"}))
            sym = ok(await s.call_tool("find_symbol", {"name": "formFeedAfter",
                                                       "index": "hard"}))
            return whole, tail, ff, sym

    whole, tail, ff, sym = run(go())
    assert (whole["start_line"], whole["end_line"], whole["total_lines"]) == (1, 3, 3)
    assert whole["text"] == "int blankTail();\n\n"
    assert (tail["start_line"], tail["end_line"], tail["text"]) == (2, 3, "\n")
    assert ff["text"] == "int formFeedAfter() { return 1; }"  # numbered as the index does
    assert sym["matches"][0]["start_line"] == 3


def test_strict_schemas_bounded_errors_and_version(server):
    url, _ = server
    huge = "p" * (1 << 20)

    async def go():
        async with session_at(url) as s:
            tools = (await s.list_tools()).tools
            e = {}
            e["k_str"] = err(await s.call_tool("search_code", {"query": "x", "k": "5"}))
            e["k_bool"] = err(await s.call_tool("search_code", {"query": "x", "k": True}))
            e["k_float"] = err(await s.call_tool("search_code", {"query": "x", "k": 5.0}))
            e["unknown"] = err(await s.call_tool("find_symbol", {"name": "x", "bogus": 1}))
            e["kinds_str"] = err(await s.call_tool("search_code", {"query": "x",
                                                                   "kinds": '["function"]'}))
            e["huge_path"] = err(await s.call_tool("get_code", {"path": huge}))
            e["huge_arg"] = err(await s.call_tool("find_symbol", {"name": "x", huge: 1}))
            e["huge_tool"] = err(await s.call_tool(huge, {}))
            e["range"] = err(await s.call_tool("get_code", {"path": "src/deposit.cpp",
                                                            "start_line": 0}))
            e["missing"] = err(await s.call_tool("callers", {}))
            return s.server_version, tools, e

    version, tools, e = run(go())
    assert version == __version__
    for t in tools:
        assert t.input_schema.get("additionalProperties") is False, t.name
    for key, text in e.items():
        assert "\n" not in text and len(text) <= 400, (key, len(text))
        assert "pydantic" not in text and "http" not in text, (key, text)
    assert "invalid argument 'k'" in e["k_str"] and "valid integer" in e["k_str"]
    assert "invalid argument 'k'" in e["k_bool"] and "invalid argument 'k'" in e["k_float"]
    assert "unknown argument 'bogus'" in e["unknown"]
    assert "invalid argument 'kinds'" in e["kinds_str"]
    assert "at most 1024 characters" in e["huge_path"]
    assert "unknown argument" in e["huge_arg"] and "Unknown tool" in e["huge_tool"]
    assert "greater than or equal to 1" in e["range"]
    assert "missing required argument 'symbol'" in e["missing"]


# ---- the fuzz run: random calls against the live server ------------------------------------

def _random_value(rng: random.Random):
    size = min(1 << 20, int(2 ** rng.uniform(0, 20)))
    kind = rng.random()
    if kind < 0.35:  # text, from random bytes
        return bytes(rng.getrandbits(8) for _ in range(min(size, 4096))).decode(
            "utf-8", "replace") * max(1, size // 4096)
    if kind < 0.5:
        return rng.choice(["src/deposit.cpp", "include/minipic/poisson.hpp", ".", "src",
                           "PoissonSolver", "depositChargeCIC", "../../etc/passwd",
                           "/etc/passwd", "hard", "minipic", "", " ", "\x00", "a" * size])
    if kind < 0.65:
        return rng.choice([0, -1, 1, 5, 100, 101, 2 ** 63, -(2 ** 70), 3.5, float("1e308")])
    if kind < 0.75:
        return rng.choice([True, False, None])
    if kind < 0.9:
        return [rng.choice(["function", "src/", "x" * min(size, 5000), 1, None])
                for _ in range(rng.randint(0, 80))]
    return {"nested": {"deeper": [1, 2, {"x": "y" * min(size, 1000)}]}}


def _random_call(rng: random.Random, names: list[str], schemas: dict) -> tuple[str, dict]:
    name = rng.choice(names) if rng.random() < 0.85 else rng.choice(
        ["", "nope", "ask ", "ASK", "x" * rng.randint(1, 1 << 16), "get_code\x00"])
    args = {}
    props = list(schemas.get(name, {}).get("properties", {}))
    for p in props:
        if rng.random() < 0.6:
            args[p] = _random_value(rng)
    if rng.random() < 0.15:
        args[rng.choice(["bogus", "x" * 300, "", "index "])] = _random_value(rng)
    return name, args


@pytest.mark.timeout(900)
def test_fuzz_500_random_calls(server):
    """500 random tool calls (random names, argument types and sizes up to 1 MB, random bytes)
    through the SDK client, plus raw random bytes posted to the endpoint: no hang, no crash,
    every reply within its time limit."""
    import httpx

    url, proc = server
    rng = random.Random(int(os.environ.get("CT_FUZZ_SEED", "16")))
    figures = {"calls": 0, "tool_errors": 0, "ok": 0, "hangs": 0, "slowest_s": 0.0,
               "raw_posts": 0}

    async def one(s, name, args):
        t0 = time.perf_counter()
        try:
            with anyio_fail_after(CALL_LIMIT_S + REPLY_SLACK_S):
                res = await s.call_tool(name, args)
        except TimeoutError:
            figures["hangs"] += 1
            return
        figures["slowest_s"] = max(figures["slowest_s"], time.perf_counter() - t0)
        figures["calls"] += 1
        if res.is_error:
            figures["tool_errors"] += 1
            text = res.content[0].text
            assert "\n" not in text and len(text) <= 400, text[:500]
        else:
            figures["ok"] += 1

    async def go():
        async with session_at(url) as s:
            tools = (await s.list_tools()).tools
            names = [t.name for t in tools]
            schemas = {t.name: t.input_schema for t in tools}
            calls = [_random_call(rng, names, schemas) for _ in range(500)]
            sem = asyncio.Semaphore(8)

            async def bounded(c):
                async with sem:
                    await one(s, *c)

            await asyncio.gather(*[bounded(c) for c in calls])
            still = ok(await s.call_tool("list_indexes", {}))
        async with httpx.AsyncClient(timeout=CALL_LIMIT_S) as client:
            for _ in range(20):
                body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 1 << 16)))
                r = await client.post(url, content=body, headers={
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream"})
                assert r.status_code in (400, 406, 413, 415, 422), r.status_code
                figures["raw_posts"] += 1
        return still

    t0 = time.perf_counter()
    still = run(go())
    figures["seconds"] = round(time.perf_counter() - t0, 1)
    print("fuzz figures:", json.dumps(figures))
    assert figures["hangs"] == 0 and figures["calls"] == 500
    assert figures["slowest_s"] < CALL_LIMIT_S + REPLY_SLACK_S
    assert still["indexes"] and proc.poll() is None  # no crash


# ---- prompt shutdown with calls in flight --------------------------------------------------

@pytest.mark.timeout(900)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_prompt_shutdown_with_calls_in_flight(sig, minipic_index, tmp_path):
    port = _free_port()
    log = tmp_path / "server.log"
    proc = _start_server(["--transport", "http", "--port", str(port), "--index",
                          str(minipic_index)], cwd=tmp_path, log=log)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        _wait_http(proc, url, log)

        async def flood():
            async with session_at(url) as s:
                await asyncio.gather(*[s.call_tool("search_code", {"query": f"charge {i}"})
                                       for i in range(40)], return_exceptions=True)

        def client():
            with contextlib.suppress(BaseException):
                run(flood())

        t = threading.Thread(target=client, daemon=True)
        t.start()
        time.sleep(1.5)  # calls are in flight now
        t0 = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=60)  # before: a busy server ignored SIGTERM for minutes
        assert time.monotonic() - t0 < 30
    finally:
        _stop(proc)


# ---- the MCP Inspector CLI (Node), where present --------------------------------------------

def _inspector() -> list[str] | None:
    """The Inspector CLI: $MCP_INSPECTOR_DIR (an npm prefix holding
    @modelcontextprotocol/inspector), else one on PATH; never downloaded by the tests."""
    if not shutil.which("node"):
        return None
    # scripts/setup.sh --dev installs it into .venv/inspector where npm is present
    prefix = os.environ.get("MCP_INSPECTOR_DIR") or str(Path(__file__).resolve().parents[1]
                                                        / ".venv" / "inspector")
    if prefix:
        exe = Path(prefix) / "node_modules" / ".bin" / "mcp-inspector"
        return [str(exe), "--cli"] if exe.exists() else None
    exe = shutil.which("mcp-inspector")
    return [exe, "--cli"] if exe else None


def _inspect(args: list[str], timeout: float = 600, expect_error: bool = False) -> dict:
    cmd = _inspector()
    if cmd is None:
        pytest.skip("MCP Inspector CLI not installed (set MCP_INSPECTOR_DIR to an npm prefix "
                    "with @modelcontextprotocol/inspector@2.12.0)")
    passed = [f"-e{k}={ENV[k]}" for k in ("PYTHONPATH", "HF_HUB_OFFLINE",
                                           "TOKENIZERS_PARALLELISM") if ENV.get(k)]
    r = subprocess.run([*cmd, "--connect-timeout", str(SERVER_START_S * 1000), *passed, *args],
                       capture_output=True, text=True, timeout=timeout, env=ENV)
    assert (r.returncode != 0) == expect_error, r.stderr[-2000:] + r.stdout[-2000:]
    return json.JSONDecoder().raw_decode(r.stdout.strip())[0]  # then maybe an error line


def test_inspector_cli_over_http(server):
    url, _ = server
    tools = _inspect([url, "--transport", "http", "--method", "tools/list"])
    names = {t["name"] for t in tools["tools"]}
    assert {"ask", "get_code", "search_papers"} <= names
    res = _inspect([url, "--transport", "http", "--method", "tools/call", "--tool-name",
                    "find_symbol", "--tool-arg", "name=PoissonSolver"])
    assert res["structuredContent"]["matches"][0]["path"] == "include/minipic/poisson.hpp"
    bad = _inspect([url, "--transport", "http", "--method", "tools/call", "--tool-name",
                    "get_code", "--tool-arg", "path=../../etc/passwd"], expect_error=True)
    assert bad.get("isError") is True


def test_inspector_cli_over_stdio(minipic_index, tmp_path):
    res = _inspect(["--cwd", str(tmp_path), "--method", "tools/call", "--tool-name",
                    "search_code", "--tool-arg", "query=charge deposition", "--tool-arg", "k=3",
                    "--", sys.executable, "-m", "codeteacher.shells.cli", "serve", "--index",
                    str(minipic_index)])
    assert res["structuredContent"]["hits"]
