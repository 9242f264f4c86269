"""Cold-start benchmark: what a user waits for, with the torch and ONNX backends side by side.

    .venv/bin/python eval/bench_cold.py --index embeddings/ippl --repo /path/to/ippl \
        [--questions QUESTIONS.json] [--runs 3] [--json out.json]

For each query backend (`embedding.query_backend`):
- cold `ask` in a fresh process: wall and CPU seconds, and its parts from `timings_ms`
  (startup = interpreter + imports, load_index, load_model, retrieve = the query itself), plus
  which heavy libraries the process imported (torch must not be among them with ONNX);
- warm query latency p50/p95 (`Engine.ask`, models loaded, each question asked once).
For each ingest backend (`embedding.backend`), with --repo: one header edited in a copy of the
repository and of the index, re-ingested by a fresh `codeteacher index` process (wall, CPU).
CPU seconds are the stable figure on a shared machine; wall includes waiting for a core.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "onnxruntime", "faiss",
         "bm25s", "tree_sitter", "llama_cpp", "httpx")
# Generic questions about any code base, used when no question file is given.
DEFAULT_QUESTIONS = ["how is the main solver implemented?", "where are boundary conditions set",
                     "what does the build configuration enable", "how is the mesh partitioned",
                     "which class manages particles", "how are results written to disk",
                     "where is parallel communication done", "what tests exist"]
BACKENDS = ("torch", "onnx")


def _settings_file(folder: Path, **embedding) -> Path:
    path = folder / f"settings-{'-'.join(f'{k}={v}' for k, v in embedding.items())}.json"
    path.write_text(json.dumps({"embedding": embedding}))
    return path


def _child(cmd: list[str], env: dict | None = None) -> tuple[subprocess.CompletedProcess, float,
                                                               float]:
    """Run a fresh process: (result, wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(cmd[:6])}... failed: {proc.stderr.strip()[-500:]}")
    return proc, wall, cpu


_PROBE = """import json, sys
from codeteacher.shells.cli import ask_main
rc = ask_main(sys.argv[1:])
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(%r))
print('HEAVY=' + json.dumps(heavy), file=sys.stderr)
sys.exit(rc)
""" % (HEAVY,)


def cold_ask(index: str, question: str, settings: Path, runs: int) -> dict:
    rows = []
    for _ in range(runs):
        proc, wall, cpu = _child([sys.executable, "-c", _PROBE, question, "--index", index,
                                  "--json", "--settings", str(settings)])
        heavy = next(json.loads(ln[6:]) for ln in proc.stderr.splitlines()
                     if ln.startswith("HEAVY="))
        t = json.loads(proc.stdout)["timings_ms"]
        rows.append({"wall_s": wall, "cpu_s": cpu, "heavy": heavy,
                     **{k: t.get(k, 0.0) for k in ("startup", "load_index", "load_model",
                                                   "retrieve", "papers", "process")}})
    med = {k: round(statistics.median(r[k] for r in rows), 3 if k.endswith("_s") else 1)
           for k in rows[0] if k != "heavy"}
    return {**med, "heavy": rows[-1]["heavy"], "runs": runs}


def warm(index: str, questions: list[str], query_backend: str) -> dict:
    from codeteacher.api import Engine
    from codeteacher.contracts.settings import Settings

    engine = Engine.load(index, Settings.model_validate(
        {"embedding": {"query_backend": query_backend}}))
    engine.warm_up()
    lat, cpu = [], []
    for q in questions:
        t0, c0 = time.perf_counter(), time.process_time()
        engine.ask(q)
        lat.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    lat.sort()
    # CPU ms of the process (all its threads) is the figure that a busy shared machine
    # does not inflate; wall ms is what a user waits on this machine now.
    return {"p50_ms": round(statistics.median(lat), 1),
            "p95_ms": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 1),
            "cpu_p50_ms": round(statistics.median(cpu), 1), "n": len(lat)}


def reingest(repo: Path, index: Path, header: str | None, backend: str, tmp: Path) -> dict:
    """Edit one header in copies of repo and index; rebuild in a fresh process."""
    work = Path(tempfile.mkdtemp(dir=tmp, prefix=f"edit-{backend}-"))
    r, ix = work / "repo", work / "index"
    shutil.copytree(repo, r, symlinks=True)
    shutil.copytree(index, ix)
    target = r / header if header else sorted(p for p in r.rglob("*.h*") if p.is_file()
                                              and p.suffix in (".h", ".hpp", ".hh"))[0]
    # At the top: the file record's text changes, so a vector is re-embedded as after a real
    # edit (a comment appended at the end changes no embedded text and loads no model).
    target.write_text("// edited by the benchmark\n" + target.read_text(errors="replace"))
    name = json.loads((index / "manifest.json").read_text())["name"]
    settings = _settings_file(work, backend=backend)
    # One untimed rebuild first: the copy's root differs from the index's (a full re-check);
    # the timed run is then exactly "one file changed since the last build".
    target_text = target.read_text()
    target.write_text(target_text.replace("// edited by the benchmark", "// edit 0"))
    _child([sys.executable, "-m", "codeteacher.shells.cli", "index", str(r), "--out", str(ix),
            "--name", name, "--settings", str(settings), "--json", "-q"])
    target.write_text(target_text)
    proc, wall, cpu = _child([sys.executable, "-m", "codeteacher.shells.cli", "index", str(r),
                              "--out", str(ix), "--name", name, "--settings", str(settings),
                              "--json", "-q"])
    rep = json.loads(proc.stdout)
    shutil.rmtree(work, ignore_errors=True)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "parsed_embedded": f"{rep['parsed']} / {rep['embedded']}", "file": str(target.relative_to(r)),
            "stages_s": rep["stage_seconds"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True, help="a built index (read only)")
    ap.add_argument("--repo", help="its repository (copied) for the re-ingest measure")
    ap.add_argument("--header", help="file to edit, relative to the repo (default: first .h)")
    ap.add_argument("--questions", help="question file for the warm latencies")
    ap.add_argument("--runs", type=int, default=3, help="cold runs per backend (median)")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    questions = DEFAULT_QUESTIONS
    if args.questions:
        raw = json.loads(Path(args.questions).read_text())
        questions = [q["question"] for q in (raw["questions"] if isinstance(raw, dict) else raw)]
    backends = args.backends.split(",")
    out: dict = {"cpu": _cpu_name(), "cores": len(os.sched_getaffinity(0)),
                 "load_avg": os.getloadavg()[0], "index": args.index}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for b in backends:
            out[f"cold_ask[{b}]"] = cold_ask(args.index, questions[0],
                                             _settings_file(tmp, query_backend=b), args.runs)
            print(b, "cold", out[f"cold_ask[{b}]"], file=sys.stderr, flush=True)
        for b in backends:
            out[f"warm[{b}]"] = warm(args.index, questions, b)
            print(b, "warm", out[f"warm[{b}]"], file=sys.stderr, flush=True)
        if args.repo:
            for b in backends:
                out[f"reingest[{b}]"] = reingest(Path(args.repo), Path(args.index), args.header,
                                                 b, tmp)
                print(b, "reingest", out[f"reingest[{b}]"], file=sys.stderr, flush=True)
    out["load_avg_end"] = os.getloadavg()[0]
    _render(out, backends)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="ascii", errors="replace"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _render(out: dict, backends: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"cold start on {out['cpu']} ({out['cores']} cores, load "
                    f"{out['load_avg']:.1f}→{out['load_avg_end']:.1f}) — {out['index']}")
    t.add_column("measure")
    for b in backends:
        t.add_column(b, justify="right")
    if len(backends) == 2:
        t.add_column(f"{backends[1]}/{backends[0]}", justify="right")

    def row(label, section, key, fmt="{:.2f}"):
        vals = [out.get(f"{section}[{b}]", {}).get(key) for b in backends]
        if all(v is None for v in vals):
            return
        cells = [fmt.format(v) if isinstance(v, (int, float)) else str(v) for v in vals]
        if len(vals) == 2:
            ok = all(isinstance(v, (int, float)) for v in vals) and vals[0]
            cells.append(f"{vals[1] / vals[0]:.2f}" if ok else "")
        t.add_row(label, *cells)

    row("cold ask: wall s", "cold_ask", "wall_s")
    row("cold ask: CPU s", "cold_ask", "cpu_s")
    for k in ("startup", "load_index", "load_model", "retrieve", "papers"):
        row(f"  {k} ms", "cold_ask", k, "{:.0f}")
    row("  heavy imports", "cold_ask", "heavy", "{}")
    row("warm p50 ms", "warm", "p50_ms", "{:.1f}")
    row("warm p95 ms", "warm", "p95_ms", "{:.1f}")
    row("warm CPU p50 ms", "warm", "cpu_p50_ms", "{:.1f}")
    row("re-ingest, 1 header edited: wall s", "reingest", "wall_s")
    row("re-ingest: CPU s", "reingest", "cpu_s")
    row("re-ingest: parsed / embedded", "reingest", "parsed_embedded", "{}")
    Console().print(t)


if __name__ == "__main__":
    sys.exit(main())
