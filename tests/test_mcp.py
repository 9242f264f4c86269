"""The MCP server with the SDK's real clients: stdio (spawned) and Streamable HTTP (a server
subprocess on 127.0.0.1), tool calls on the sample app, refusals, concurrency, the bearer
token, and hot reload of a rebuilt index.

Server start-up loads torch and the embedding model, so the module starts one HTTP server
(serving two indexes) and one stdio server, and shares them across tests.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from codeteacher.shells.serve import TOKEN_ENV, bearer_ok, is_loopback  # noqa: E402

TOKEN = "test-token-0123456789abcdef"
CORE_TOOLS = {"ask", "search_code", "find_symbol", "get_code", "file_summary",
              "module_summary", "callers", "callees", "related", "index_status", "list_indexes"}
SERVER_START_S = 600  # a deadline for start-up on a loaded machine, not an assertion on speed


# ---- fixtures ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_copy(tmp_path_factory, minipic_src, default_settings):
    """A small copy of the sample app (headers + two sources), indexed as 'smallcopy', with a
    symlink inside it that points to a file outside the repository."""
    from codeteacher.ingest.build import build_index

    base = tmp_path_factory.mktemp("mcp")
    repo = base / "repo"
    shutil.copytree(minipic_src / "include", repo / "include")
    (repo / "src").mkdir()
    for f in ("deposit.cpp", "gather.cpp"):
        shutil.copy2(minipic_src / "src" / f, repo / "src" / f)
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.hpp").write_text("// outside the repository\nint secretOutside() "
                                        "{ return 42; }\n")
    (repo / "src" / "linked_secret.hpp").symlink_to(outside / "secret.hpp")
    index = base / "index"
    build_index(repo, out=index, name="smallcopy", settings=default_settings)
    return repo, index


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **extra}
    if env.get("PYTHONPATH"):  # servers run in other folders: a relative entry would miss
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in
                                            env["PYTHONPATH"].split(os.pathsep) if p)
    return env


@pytest.fixture(scope="module")
def http_server(minipic_index, small_copy, tmp_path_factory):
    """(url, cwd) of a server on 127.0.0.1 that serves both indexes and wants the token."""
    import httpx

    port = _free_port()
    work = tmp_path_factory.mktemp("http-server")  # cwd: no paper library here
    log = open(work / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeteacher.shells.cli", "serve", "--transport", "http",
         "--host", "127.0.0.1", "--port", str(port), "--require-token",
         "--index", str(minipic_index), "--index", str(small_copy[1])],
        cwd=work, env=_env(**{TOKEN_ENV: TOKEN}), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail("MCP server exited: " + (work / "server.log").read_text()[-2000:])
            try:
                httpx.get(url, timeout=2)
                break  # any HTTP answer (401 here) means it is listening, indexes loaded
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    pytest.fail("MCP server did not start: "
                                + (work / "server.log").read_text()[-2000:])
                time.sleep(0.5)
        yield url, work
    finally:
        os.kill(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, 9)
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def http_url(http_server):
    return http_server[0]


@contextlib.asynccontextmanager
async def http_session(url: str, token: str = TOKEN):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client:
        async with streamable_http_client(url, http_client=client) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                yield session


def run(coro):
    return asyncio.run(coro)


async def call(session, tool, **args):
    res = await session.call_tool(tool, args)
    return res


def ok(res) -> dict:
    assert not res.is_error, res.content[0].text if res.content else res
    return res.structured_content


def err(res) -> str:
    assert res.is_error, res.structured_content
    return res.content[0].text


# ---- pure checks ---------------------------------------------------------------------------

def test_loopback_and_bearer_check():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert not is_loopback("example.org")
    h = [(b"host", b"x"), (b"authorization", f"Bearer {TOKEN}".encode())]
    assert bearer_ok(h, TOKEN)
    assert not bearer_ok([(b"authorization", b"Bearer wrong")], TOKEN)
    assert not bearer_ok([(b"authorization", f"Basic {TOKEN}".encode())], TOKEN)
    assert not bearer_ok([], TOKEN)


def test_non_loopback_bind_refused_without_token(minipic_index):
    env = _env()
    env.pop(TOKEN_ENV, None)
    r = subprocess.run([sys.executable, "-m", "codeteacher.shells.cli", "serve", "--transport", "http",
                        "--host", "0.0.0.0", "--port", "0", "--index", str(minipic_index)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert TOKEN_ENV in r.stderr and "Traceback" not in r.stderr


def test_mcp_config(minipic_index, capsys):
    from codeteacher.shells.cli import main

    assert main(["mcp-config", "--index", str(minipic_index)]) == 0
    cfg = json.loads(capsys.readouterr().out)["mcpServers"]["codeteacher"]
    assert Path(cfg["command"]).is_absolute() and Path(cfg["command"]).exists()
    assert cfg["args"][-3:] == ["serve", "--index", str(Path(minipic_index).absolute())]
    assert main(["mcp-config", "--index", str(minipic_index), "--transport", "http",
                 "--port", "9123"]) == 0
    out = json.loads(capsys.readouterr().out)["mcpServers"]["codeteacher"]
    assert out["url"] == "http://127.0.0.1:9123/mcp"
    assert main(["mcp-config", "--index", "/nonexistent/index"]) != 0


# ---- stdio ---------------------------------------------------------------------------------

def test_stdio_client(minipic_index, tmp_path):
    params = StdioServerParameters(command=sys.executable, cwd=str(tmp_path), env=_env(),
                                   args=["-m", "codeteacher.shells.cli", "serve", "--index",
                                         str(minipic_index)])

    async def go():
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert CORE_TOOLS <= names
            found = ok(await call(s, "find_symbol", name="PoissonSolver"))
            assert found["matches"][0]["path"] == "include/minipic/poisson.hpp"
            assert "outside" in err(await call(s, "get_code", path="../../etc/passwd"))
            hits = ok(await call(s, "search_code", query="charge deposition", k=3))["hits"]
            assert hits and all(h["path"] and h["snippet"] for h in hits)

    run(go())


# ---- Streamable HTTP -----------------------------------------------------------------------

def test_http_requires_token(http_url):
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert httpx.post(http_url, json=body, timeout=10).status_code == 401
    r = httpx.post(http_url, json=body, headers={"Authorization": "Bearer wrong-token-xxxxxxx"},
                   timeout=10)
    assert r.status_code == 401 and "bearer" in r.headers["www-authenticate"].lower()

    async def go():
        with pytest.raises(Exception):
            async with http_session(http_url, token="wrong-token-xxxxxxxx"):
                pass

    run(go())


def test_http_list_tools(http_url):
    async def go():
        async with http_session(http_url) as s:
            return (await s.list_tools()).tools

    tools = {t.name: t for t in run(go())}
    assert CORE_TOOLS <= set(tools)
    for t in tools.values():
        assert t.description and t.input_schema["type"] == "object", t.name
        assert t.output_schema and t.output_schema["type"] == "object", t.name
        assert t.annotations and t.annotations.read_only_hint is True, t.name
        assert t.annotations.destructive_hint is False, t.name
    assert tools["search_code"].input_schema["required"] == ["query"]
    assert {"query", "index", "k", "kinds", "paths"} <= set(
        tools["search_code"].input_schema["properties"])
    assert tools["get_code"].input_schema["properties"]["start_line"]


def test_http_tools_on_sample_app(http_url, minipic_src):
    async def go():
        async with http_session(http_url) as s:
            out = {}
            out["indexes"] = ok(await call(s, "list_indexes"))
            out["sym"] = ok(await call(s, "find_symbol", name="PoissonSolver"))
            out["code"] = ok(await call(s, "get_code", path="include/minipic/poisson.hpp",
                                        start_line=73, end_line=89))
            out["whole"] = ok(await call(s, "get_code", path="src/deposit.cpp"))
            out["callers"] = ok(await call(s, "callers", symbol="depositChargeCIC"))
            out["callees"] = ok(await call(s, "callees", symbol="depositChargeCIC"))
            out["related"] = ok(await call(s, "related", symbol_or_path="src/deposit.cpp"))
            out["file"] = ok(await call(s, "file_summary", path="src/deposit.cpp"))
            out["module"] = ok(await call(s, "module_summary", path="src"))
            out["search"] = ok(await call(s, "search_code", query="charge deposition", k=5))
            out["kinds"] = ok(await call(s, "search_code", query="charge deposition", k=5,
                                         kinds=["function"]))
            out["paths"] = ok(await call(s, "search_code", query="solver", k=5,
                                         paths=["src/"]))
            out["ask"] = ok(await call(s, "ask", question="Where is the cloud-in-cell charge "
                                       "deposition implemented?"))
            out["status"] = ok(await call(s, "index_status"))
            out["small"] = ok(await call(s, "index_status", index="smallcopy"))
            return out

    o = run(go())
    assert o["indexes"]["default"] == "minipic"
    assert {i["name"] for i in o["indexes"]["indexes"]} == {"minipic", "smallcopy"}
    assert o["sym"]["matches"][0]["path"] == "include/minipic/poisson.hpp"
    assert o["sym"]["matches"][0]["kind"] == "class"
    lines = (minipic_src / "include/minipic/poisson.hpp").read_text().splitlines()
    assert o["code"]["text"] == "\n".join(lines[72:89])
    assert (o["code"]["start_line"], o["code"]["end_line"]) == (73, 89)
    deposit = (minipic_src / "src/deposit.cpp").read_text().splitlines()
    assert o["whole"]["text"] == "\n".join(deposit) and not o["whole"]["truncated"]
    assert any("Simulation" in n["name"] for n in o["callers"]["neighbours"])
    assert o["callees"]["neighbours"]
    assert o["related"]["neighbours"]
    assert o["file"]["kind"] == "file" and "deposit" in o["file"]["text"]
    assert o["module"]["kind"] == "module" and o["module"]["path"] == "src"
    hits = o["search"]["hits"]
    assert hits and {"path", "start_line", "end_line", "symbol", "kind", "score", "why",
                     "snippet"} <= set(hits[0])
    assert "src/deposit.cpp" in {h["path"] for h in hits}
    assert o["kinds"]["hits"] and all(h["kind"] == "function" for h in o["kinds"]["hits"])
    assert o["paths"]["hits"] and all(h["path"].startswith("src/") for h in o["paths"]["hits"])
    assert o["ask"]["answer"] and o["ask"]["evidence"]
    assert "src/deposit.cpp" in {e["path"] for e in o["ask"]["evidence"]}
    st = o["status"]
    assert st["index"] == "minipic" and st["counts"]["files"] > 0 and st["chunks_by_kind"]
    assert isinstance(st["stale_files"], list) and st["model_id"]
    assert o["small"]["index"] == "smallcopy"


def test_http_refusals(http_url, small_copy):
    async def go():
        async with http_session(http_url) as s:
            e = {}
            e["dotdot"] = err(await call(s, "get_code", path="../minipic/src/deposit.cpp"))
            e["dotdot2"] = err(await call(s, "get_code", path="src/../../etc/passwd"))
            e["abs"] = err(await call(s, "get_code", path="/etc/passwd"))
            e["unindexed"] = err(await call(s, "get_code", path="src/not_there.cpp"))
            e["symlink"] = err(await call(s, "get_code", path="src/linked_secret.hpp",
                                          index="smallcopy"))
            e["file_abs"] = err(await call(s, "file_summary", path="/etc/passwd"))
            e["related"] = err(await call(s, "related", symbol_or_path="../../etc"))
            e["index"] = err(await call(s, "search_code", query="x", index="no-such-index"))
            e["list_index"] = err(await call(s, "index_status", index="no-such-index"))
            e["symbol"] = err(await call(s, "callers", symbol="noSuchFunctionAnywhere"))
            e["k"] = err(await call(s, "search_code", query="x", k=0))
            e["missing"] = err(await call(s, "find_symbol"))
            e["type"] = err(await call(s, "get_code", path="src/deposit.cpp",
                                       start_line="first"))
            e["kind"] = err(await call(s, "search_code", query="x", kinds=["nonsense"]))
            e["range"] = err(await call(s, "get_code", path="src/deposit.cpp",
                                        start_line=50, end_line=10))
            e["empty"] = err(await call(s, "ask", question="   "))
            still = ok(await call(s, "list_indexes"))  # the server survived all of it
            return e, still

    e, still = run(go())
    for key in ("dotdot", "dotdot2", "related"):
        assert "outside the indexed repository" in e[key], (key, e[key])
    # A symlink out of the repository is never indexed, so it is refused as not indexed.
    assert "not an indexed file" in e["symlink"] or "outside" in e["symlink"], e["symlink"]
    assert "absolute" in e["abs"] and "absolute" in e["file_abs"]
    assert "not an indexed file" in e["unindexed"]
    assert "unknown index 'no-such-index'" in e["index"] and "minipic" in e["index"]
    assert "unknown index" in e["list_index"]
    assert "unknown symbol" in e["symbol"]
    assert "greater than or equal to 1" in e["k"]
    assert "name" in e["missing"] and "required" in e["missing"].lower()
    assert "start_line" in e["type"]
    assert "unknown kind" in e["kind"]
    assert "empty line range" in e["range"]
    assert "empty" in e["empty"]
    assert "internal error" not in " ".join(e.values())
    assert still["indexes"]


def test_http_50_concurrent_searches(http_url):
    queries = ["charge deposition", "Poisson solver", "halo exchange", "particle push",
               "FFT", "field energy", "conjugate gradient", "ghost cells", "mesh slab",
               "gather electric field"]

    async def one_session(session_no: int):
        async with http_session(http_url) as s:
            return await asyncio.gather(*[
                s.call_tool("search_code", {"query": queries[(session_no + i) % 10], "k": 5})
                for i in range(10)])

    async def go():
        groups = await asyncio.gather(*[one_session(n) for n in range(5)])
        return [r for g in groups for r in g]

    results = run(go())
    assert len(results) == 50
    for r in results:
        assert not r.is_error and r.structured_content["hits"], r.content


def test_http_hot_reload(http_url, small_copy, default_settings):
    """Rebuild the 'smallcopy' index in place while searches run against it; every call
    succeeds, and afterwards the server answers from the new content."""
    from codeteacher.ingest.build import build_index

    repo, index = small_copy
    with open(repo / "src" / "deposit.cpp", "a") as fh:
        fh.write("\n/// Added after the first build.\ndouble hotReloadProbe(double x) "
                 "{ return 2.0 * x; }\n")

    async def go():
        async with http_session(http_url) as s:
            before = ok(await call(s, "find_symbol", name="hotReloadProbe", index="smallcopy"))
            stale = ok(await call(s, "index_status", index="smallcopy"))
            build = asyncio.create_task(asyncio.to_thread(
                build_index, repo, out=index, name="smallcopy", settings=default_settings))
            during = []
            while not build.done():
                during.append(await call(s, "search_code", query="deposit charge", k=3,
                                         index="smallcopy"))
            await build
            after = ok(await call(s, "find_symbol", name="hotReloadProbe", index="smallcopy"))
            code = ok(await call(s, "get_code", path="src/deposit.cpp", index="smallcopy"))
            status = ok(await call(s, "index_status", index="smallcopy"))
            return before, stale, during, after, code, status

    before, stale, during, after, code, status = run(go())
    assert before["matches"] == []
    assert "src/deposit.cpp" in stale["stale_files"]
    assert during and all(not r.is_error for r in during)
    assert after["matches"] and after["matches"][0]["path"] == "src/deposit.cpp"
    assert "hotReloadProbe" in code["text"]
    assert status["reloads"] >= 1 and status["stale_files"] == []


def test_http_paper_tools(http_server, minipic_index):
    """The paper tools over a tiny library created where a default library lies: beside the
    index folder (never the server's cwd). They are always registered: a broken import of our
    own papers package fails the server, never a skipped test."""
    url, cwd = http_server
    from codeteacher.papers.library import Library
    from codeteacher.papers.model import PaperRecord

    async def names():
        async with http_session(url) as s:
            return {t.name for t in (await s.list_tools()).tools}

    assert {"link_papers_to_code", "search_papers", "paper_details"} <= run(names())

    async def go(after_library: bool):
        async with http_session(url) as s:
            if not after_library:
                return err(await call(s, "search_papers", query="cloud-in-cell"))
            return (ok(await call(s, "search_papers", query="cloud-in-cell deposition")),
                    ok(await call(s, "paper_details", ref="10.1000/ct.test.1")),
                    err(await call(s, "paper_details", ref="no-such-paper")),
                    ok(await call(s, "link_papers_to_code", path_or_symbol="depositChargeCIC")),
                    err(await call(s, "link_papers_to_code", path_or_symbol="noSuchThing")))

    assert "no paper library" in run(go(False))
    with Library.open(Path(minipic_index).parent / "papers.sqlite", create=True,
                      snapshot=False) as lib:
        lib.add([PaperRecord(key="pic1991", title="Particle simulation with cloud-in-cell "
                             "charge deposition", authors=["Doe, Jane"], year=1991,
                             ids={"doi": "10.1000/ct.test.1"})])
    found, details, missing, links, unknown = run(go(True))
    assert found["papers"][0]["key"] == "pic1991"
    assert details["key"] == "pic1991" and details["year"] == 1991
    assert "no paper" in missing
    assert links["target"] == "depositChargeCIC" and isinstance(links["papers"], list)
    assert "noSuchThing" in unknown
