"""LLM benchmark: explanation throughput per backend and the cost of re-explaining one change.

    .venv/bin/python eval/bench_llm.py [--repo src/codeteacher/demo/minipic] [--files 2]
        [--backends llama-cpp,openai] [--max-tokens 96] [--max-code-chars 2000] [--json OUT]

Indexes the repository without an LLM, keeps the stage files of the first --files source files
that have 2-8 explainable chunks (with their file, module and call-chain entities; all levels
are explained), then per backend runs the explanation stage cold (no cache) and measures
targets explained per second and tokens per second; then edits one chunk of the first file and
reruns with the cold run's output as cache: the seconds a one-file change costs and how many
targets it regenerated. The openai backend talks to a real llama_cpp.server (the packaged GGUF)
started on 127.0.0.1 for the run. Not a test: figures depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from codeteacher.contracts.models import Chunk, Entity
from codeteacher.contracts.settings import Settings
from codeteacher.generation import packaged_gguf_path
from codeteacher.ingest.build import build_index
from codeteacher.ingest.explain import explain_stage, explainable, read_jsonl


def subset(ix: Path, out: Path, n_files: int, settings: Settings) -> list[str]:
    chunks = read_jsonl(ix / "chunks.jsonl", Chunk)
    entities = read_jsonl(ix / "entities.jsonl", Entity)
    per_file: dict[str, int] = {}
    for c in explainable(chunks, settings.generation.explain):
        per_file[c.path] = per_file.get(c.path, 0) + 1
    files = [p for p in sorted(per_file) if 2 <= per_file[p] <= 8 and "/test" not in p][:n_files]
    keep = [c for c in chunks if c.path in files]
    ids = {c.id for c in keep}
    ents = [e for e in entities if
            (e.level == "file" and e.path in files) or
            (e.level == "module" and any(f.startswith("" if e.path in ("", ".") else e.path + "/")
                                         for f in files)) or
            (e.level == "call_chain" and e.id.split(":", 1)[1] in ids)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "chunks.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in keep))
    (out / "entities.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in ents))
    (out / "project_structure.json").write_text((ix / "project_structure.json").read_text())
    return files


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(ctx: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model",
                             str(packaged_gguf_path()), "--host", "127.0.0.1", "--port",
                             str(port), "--n_ctx", str(ctx)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url + "/models", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("llama_cpp.server did not start")


def run_backend(backend: str, d: Path, args, url: str = "") -> dict:
    s = Settings()
    s.generation.explanations = s.generation.explanations.model_copy(update={
        "backend": backend, "context_size": args.ctx, "max_tokens": args.max_tokens,
        "base_url": url or s.generation.explanations.base_url, "model":
        "smollm2" if backend == "openai" else s.generation.explanations.model,
        "concurrency": 1})
    s.generation.explain.max_code_chars = args.max_code_chars
    files = (d / "chunks.jsonl", d / "entities.jsonl", d / "project_structure.json")
    cold_out = d / f"expl-{backend}.jsonl"
    cold = explain_stage(*files, cold_out, s, cache=[], progress=True)
    # One-file change: edit the first explained chunk's body, rerun with the cold output cached.
    chunks = read_jsonl(files[0], Chunk)
    target = explainable(chunks, s.generation.explain)[0]
    edited = d / f"edited-{backend}"
    edited.mkdir(exist_ok=True)
    (edited / "chunks.jsonl").write_text("".join(
        (c.model_copy(update={"text": c.text.replace("{", "{\n    // edited", 1)})
         if c.id == target.id else c).model_dump_json() + "\n" for c in chunks))
    warm = explain_stage(edited / "chunks.jsonl", files[1], files[2], edited / "e.jsonl", s,
                         cache=cold_out)
    secs = max(cold.seconds, 1e-9)
    return {"backend": backend, "targets": cold.targets, "generated": cold.generated,
            "failed": cold.failed, "truncated": cold.truncated, "seconds": cold.seconds,
            "targets_per_s": round(cold.generated / secs, 3),
            "tokens_in": cold.tokens_in, "tokens_out": cold.tokens_out,
            "out_tokens_per_s": round(cold.tokens_out / secs, 1),
            "all_tokens_per_s": round((cold.tokens_in + cold.tokens_out) / secs, 1),
            "by_mode": {m: c.get("generated", 0) for m, c in cold.by_mode.items()},
            "one_change_seconds": warm.seconds, "one_change_regenerated": warm.generated,
            "one_change_cached": warm.cached, "one_change_ids": warm.generated_ids}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parent.parent /
                                          "src" / "codeteacher" / "demo" / "minipic"))
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--backends", default="llama-cpp,openai")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--max-code-chars", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        build_index(args.repo, tmp / "ix")
        index_s = time.perf_counter() - t0
        files = subset(tmp / "ix", tmp / "sub", args.files, Settings())
        print(f"indexed in {index_s:.0f} s; explaining {files}", file=sys.stderr, flush=True)
        results = {"repo": args.repo, "files": files, "index_seconds_no_llm": round(index_s, 1),
                   "load_avg": os.getloadavg(), "cpus": os.cpu_count(), "runs": []}
        for backend in args.backends.split(","):
            proc = None
            url = ""
            if backend == "openai":
                proc, url = start_server(args.ctx)
            try:
                results["runs"].append(run_backend(backend, tmp / "sub", args, url))
            finally:
                if proc is not None:
                    proc.terminate()
                    proc.wait(timeout=30)
            print(json.dumps(results["runs"][-1]), flush=True)
        results["load_avg_end"] = os.getloadavg()
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
