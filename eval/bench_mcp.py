"""Benchmark the MCP server over Streamable HTTP (not a test).

Starts `codeteacher serve --transport http` on 127.0.0.1 with the given index, then measures
  * start-up: seconds until the server answers (indexes and the embedding model loaded),
  * warm latency p50/p95 of search_code and ask (extractive, no LLM) from one client,
  * requests per second of search_code with N concurrent clients (one session each),
  * the server's memory (RSS) after loading and after the load phase,
and prints a table (or JSON with --json). The server is stopped by PID at the end.

    .venv/bin/python eval/bench_mcp.py --index embeddings/minipic
    .venv/bin/python eval/bench_mcp.py --index embeddings/ippl --questions q.json --n 200
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

GENERIC_QUERIES = [
    "where is the main time step loop", "how are boundary conditions applied",
    "which class owns the mesh", "how is the linear system solved", "where is memory allocated",
    "how are particles moved", "what does the solver return", "how is parallel communication done",
    "where are input parameters read", "how is the output written",
    "which function computes the field energy", "how is the grid decomposed",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _queries(path: str | None) -> list[str]:
    if not path:
        return GENERIC_QUERIES
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [q["question"] for q in data["questions"]]


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))]


def _stats(ms: list[float]) -> dict:
    return {"n": len(ms), "p50_ms": round(_pct(ms, 50), 1), "p95_ms": round(_pct(ms, 95), 1),
            "mean_ms": round(statistics.fmean(ms), 1)}


async def _session(url: str):
    from contextlib import AsyncExitStack

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    stack = AsyncExitStack()
    r, w = await stack.enter_async_context(streamable_http_client(url))
    s = await stack.enter_async_context(ClientSession(r, w))
    await s.initialize()
    return stack, s


async def _timed(s, tool: str, args: dict) -> tuple[float, object]:
    t0 = time.perf_counter()
    res = await s.call_tool(tool, args)
    ms = (time.perf_counter() - t0) * 1000
    if res.is_error:
        raise RuntimeError(f"{tool} failed: {res.content[0].text}")
    return ms, res


async def _bench(url: str, queries: list[str], n: int, clients: int, per_client: int, k: int,
                 rss) -> dict:
    out: dict = {}
    stack, s = await _session(url)
    try:
        for q in queries[:4]:  # warm-up: first calls pay for lazy imports and caches
            await _timed(s, "search_code", {"query": q, "k": k})
            await _timed(s, "ask", {"question": q, "k": k})
        search, ask, ask_engine = [], [], []
        for i in range(n):
            ms, _ = await _timed(s, "search_code", {"query": queries[i % len(queries)], "k": k})
            search.append(ms)
        for i in range(n):
            ms, res = await _timed(s, "ask", {"question": queries[i % len(queries)], "k": k})
            ask.append(ms)
            ask_engine.append(res.structured_content["timings_ms"].get("total", 0.0))
        out["search_code"] = _stats(search)
        out["ask"] = _stats(ask)
        out["ask (engine only)"] = _stats(ask_engine)
    finally:
        await stack.aclose()

    lat: list[float] = []
    ready = asyncio.Barrier(clients + 1)
    done = asyncio.Barrier(clients + 1)

    async def worker(c: int) -> None:
        stack, sess = await _session(url)  # entered and closed in this task (anyio scopes)
        try:
            await ready.wait()
            for i in range(per_client):
                ms, _ = await _timed(sess, "search_code",
                                     {"query": queries[(c * 7 + i) % len(queries)], "k": k})
                lat.append(ms)
            await done.wait()
        finally:
            await stack.aclose()

    tasks = [asyncio.create_task(worker(c)) for c in range(clients)]
    await ready.wait()
    t0 = time.perf_counter()
    await done.wait()
    wall = time.perf_counter() - t0
    await asyncio.gather(*tasks)
    out[f"search_code x{clients} clients"] = {**_stats(lat),
                                              "rps": round(len(lat) / wall, 1)}
    out["rss_after_load_MiB"] = rss[0]
    out["rss_after_bench_MiB"] = round(rss[1]() / 2**20, 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True, help="index folder")
    ap.add_argument("--questions", help='question file {"questions": [{"id", "question"}]}')
    ap.add_argument("--n", type=int, default=100, help="sequential calls per tool")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--per-client", type=int, default=50)
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("--settings")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import httpx
    import psutil

    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    cmd = [sys.executable, "-m", "codeteacher.shells.cli", "serve", "--transport", "http",
           "--host", "127.0.0.1", "--port", str(port), "--index", args.index]
    if args.settings:
        cmd += ["--settings", args.settings]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            if proc.poll() is not None:
                print(proc.stderr.read().decode(errors="replace")[-2000:], file=sys.stderr)
                return 1
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        startup = time.perf_counter() - t0
        ps = psutil.Process(proc.pid)
        rss0 = round(ps.memory_info().rss / 2**20, 1)
        res = asyncio.run(_bench(url, _queries(args.questions), args.n, args.clients,
                                 args.per_client, args.k, (rss0, lambda: ps.memory_info().rss)))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    res = {"index": str(args.index), "startup_s": round(startup, 1), "cpus": os.cpu_count(),
           "load_avg_1m": round(os.getloadavg()[0], 2), **res}
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"MCP over HTTP: {args.index}")
    for col in ("measure", "n", "p50 ms", "p95 ms", "mean ms", "req/s"):
        t.add_column(col, justify="left" if col == "measure" else "right")
    for name, v in res.items():
        if isinstance(v, dict):
            t.add_row(name, str(v["n"]), str(v["p50_ms"]), str(v["p95_ms"]), str(v["mean_ms"]),
                      str(v.get("rps", "")))
    con = Console()
    con.print(t)
    con.print(f"start-up {res['startup_s']} s; server RSS {res['rss_after_load_MiB']} MiB after "
              f"load, {res['rss_after_bench_MiB']} MiB after the run; {res['cpus']} CPUs, "
              f"load average {res['load_avg_1m']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
