"""Ingest benchmark, embedding backends side by side: full index build (seconds per stage),
index size, re-ingest after editing one header, warm query latency and evidence-file recall;
and embedding throughput of torch float32, ONNX float32 and ONNX without ORT's online graph
optimisations on the index's own texts, with the cosine of each to torch.

    .venv/bin/python eval/bench_ingest.py --repo /path/to/ippl [--backends torch,onnx] \
        [--questions ../shared/benchmarks/ippl/questions_v2.json \
         --references ../shared/benchmarks/ippl/reference_answers_v2.json] \
        [--embed-sample 256] [--embed-only INDEX] [--naive] [--keep DIR]

`--naive` also times, in the same run, the naive dense baseline an out-of-the-box user would
build: the same packaged MiniLM through sentence-transformers (torch float32, its own default
256-token window and batch size) over 40-line windows of every collected file, no parsing, one
FAISS flat index; in a fresh process (its imports reported apart), with the ratio of ours to it.
The repository is copied to a scratch folder first (the edit must not touch the original).
`--embed-only INDEX` skips the builds and measures throughput on an existing index's texts.
Model load and the first (warm-up) batch are excluded from texts/s.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from codeteacher.api import Engine
from codeteacher.contracts.settings import load_settings
from codeteacher.ingest.build import build_index

sys.path.insert(0, str(Path(__file__).parent))
from bench_retrieval import evaluate  # noqa: E402


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def ingest(repo_src: Path, settings, backend: str, header: str | None, questions, refs,
           tmp: Path, keep: Path | None = None) -> tuple[dict, Path]:
    """`backend` is 'torch', 'onnx' or 'auto', optionally ':QUANTIZE' ('onnx:none')."""
    settings = settings.model_copy(deep=True)
    settings.embedding.backend, _, quantize = backend.partition(":")
    if quantize:
        settings.embedding.quantize = quantize
    repo = tmp / f"repo-{backend}"
    shutil.copytree(repo_src, repo, symlinks=True)
    out = tmp / f"index-{backend}"
    load, t0, c0 = os.getloadavg()[0], time.perf_counter(), _cpu()
    full = build_index(repo, out=out, settings=settings)
    row = {"full_s": time.perf_counter() - t0, "full_cpu_s": _cpu() - c0, "load": load,
           "load_after": os.getloadavg()[0], "embedded": full.embedded,
           "files_records": f"{full.files} / {sum(full.chunks_by_kind.values())}",
           "size_mib": du(out) / 2**20, "stages": full.stage_seconds,
           "backend_recorded": "{backend} {quantize}".format(
               **json.loads((out / "manifest.json").read_text())["embedding"])}
    t0 = time.perf_counter()
    same = build_index(repo, out=out, settings=settings)
    row["same_s"], row["same_embedded"] = time.perf_counter() - t0, same.embedded
    target = repo / header if header else sorted(repo.rglob("*.h"))[0]
    target.write_text("// edited by the benchmark\n" + target.read_text())  # re-embeds its file
    t0 = time.perf_counter()
    edit = build_index(repo, out=out, settings=settings)
    row["edit_s"] = time.perf_counter() - t0
    row["edit"] = f"{target.relative_to(repo)}: {edit.parsed} parsed / {edit.embedded} embedded"
    if questions:
        engine = Engine.load(out, settings)
        engine.warm_up()
        r = evaluate(engine, questions, refs)
        row["p50_ms"], row["p95_ms"] = r["p50_ms"], r["p95_ms"]
        a = r["recall"]["ALL"]
        row["recall"] = f"{a['r@5']:.3f} / {a['r@10']:.3f} (n={a['n']})"
    if keep is not None:  # rebuilt on the original repository (the copy goes away): only the
        shutil.rmtree(keep, ignore_errors=True)  # edited header is parsed and embedded again
        shutil.copytree(out, keep)
        build_index(repo_src, out=keep, settings=settings)
    return row, out


NAIVE_LINES = 40  # lines per window of the naive baseline


def cpu_facts() -> str:
    """CPU model, the vector extensions that decide the embedding backend, load average."""
    name, flags = "?", set()
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name") and name == "?":
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    ext = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16") if f in flags]
    return (f"{name}, {len(os.sched_getaffinity(0))} cores, {'/'.join(ext) or 'no AVX2'}"
            f"{'' if 'amx_bf16' in flags else ', no AMX'}")


def naive_worker(repo: str, out: str) -> None:
    """The naive baseline (run as `--naive-worker REPO OUT` in a fresh process): prints JSON."""
    t0, c0 = time.perf_counter(), _cpu()
    import faiss
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from codeteacher.embedding import resolve_model_path
    from codeteacher.ingest.collect import collect, read_text

    t1, c1 = time.perf_counter(), _cpu()
    settings = load_settings(None)
    model = SentenceTransformer(resolve_model_path(settings.embedding.model), device="cpu")
    report = collect(repo, settings.collect)
    windows = []
    for f in report.files:
        lines = read_text(report.root, f.path).splitlines()
        windows += ["\n".join(lines[s:s + NAIVE_LINES])
                    for s in range(0, max(1, len(lines)), NAIVE_LINES)]
    vecs = model.encode(windows, normalize_embeddings=True, convert_to_numpy=True)
    index = faiss.IndexFlatIP(vecs.shape[1])
    index.add(np.ascontiguousarray(vecs, dtype=np.float32))
    Path(out).mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(Path(out) / "faiss.index"))
    print(json.dumps({"import_s": t1 - t0, "import_cpu_s": c1 - c0,
                      "full_s": time.perf_counter() - t1, "full_cpu_s": _cpu() - c1,
                      "files": len(report.files), "windows": len(windows),
                      "max_seq_length": model.max_seq_length}))


def naive(repo: Path, tmp: Path) -> dict:
    import subprocess

    load = os.getloadavg()[0]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, __file__, "--naive-worker", str(repo),
                           str(tmp / "index-naive")], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise SystemExit(f"error: naive baseline failed: {proc.stderr.strip()[-400:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "load": load,
            "load_after": os.getloadavg()[0]}


def embed_throughput(index: Path, n: int, queries: list[str]) -> dict:
    """texts/s and CPU s per text for each backend on `n` of the index's embedded texts, their
    cosine to torch float32, and how often the dense top-10 of a question agrees."""
    import numpy as np

    from codeteacher.contracts.jsonio import read_jsonl
    from codeteacher.contracts.models import Chunk
    from codeteacher.contracts.settings import EmbeddingSettings
    from codeteacher.embedding import load_embedder
    from codeteacher.index.layout import embed_text

    manifest = json.loads((index / "manifest.json").read_text())
    es = EmbeddingSettings.model_validate({**manifest["embedding"], "quantize": "none"})
    recs = [r for r in read_jsonl(index / "records.jsonl", Chunk) if r.kind not in es.skip_kinds]
    texts = [embed_text(r, es.max_code_chars) for r in recs][:n]
    vectors = np.load(index / "vectors.npy")
    out: dict = {"n": len(texts), "threads": len(os.sched_getaffinity(0))}
    ref_t = ref_q = None
    for label, backend, level in (("torch fp32", "torch", None), ("onnx fp32", "onnx", None),
                                  ("onnx, no ORT opt", "onnx", "ORT_DISABLE_ALL"),
                                  ("onnx int8 (per channel)", "onnx", "int8")):
        quantize = "int8" if level == "int8" else "none"
        level = None if level == "int8" else level
        emb = load_embedder(es.model_copy(update={"backend": backend, "quantize": quantize}))
        if level:  # the same exported graph, without ORT's online graph optimisations
            import copy

            import onnxruntime as ort

            emb = copy.copy(emb)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = out["threads"]
            opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
            emb.session = ort.InferenceSession(emb.session._model_path, opts,
                                               providers=["CPUExecutionProvider"])
        emb.embed(texts[:16])  # warm-up
        t0, c0 = time.perf_counter(), _cpu()
        v = emb.embed(texts)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        qv = np.vstack([emb.embed([q]) for q in queries])
        if ref_t is None:
            ref_t, ref_q = v, qv
        top = [set(np.argsort(-(vectors @ q))[:10]) for q in qv]
        ref_top = [set(np.argsort(-(vectors @ q))[:10]) for q in ref_q]
        out[label] = {"texts_per_s": len(texts) / wall, "cpu_ms_per_text": cpu / len(texts) * 1e3,
                      "min_cos": float((v * ref_t).sum(1).min()),
                      "top10_agreement": float(np.mean([len(a & b) / 10
                                                        for a, b in zip(top, ref_top)]))}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo")
    ap.add_argument("--questions")
    ap.add_argument("--references")
    ap.add_argument("--settings")
    ap.add_argument("--header", help="header to edit (default: the first .h file)")
    ap.add_argument("--backends", default="torch,onnx",
                    help="ingest backends to compare, each optionally :QUANTIZE (onnx:none)")
    ap.add_argument("--keep", help="keep each built index as KEEP/<backend>, rebuilt on the "
                    "original repository (for recall runs; reuses its vectors)")
    ap.add_argument("--embed-sample", type=int, default=256,
                    help="texts for the throughput comparison (0: skip)")
    ap.add_argument("--embed-only", help="an existing index: only the throughput comparison")
    ap.add_argument("--naive", action="store_true",
                    help="also time the naive dense baseline (see above) in the same run")
    ap.add_argument("--naive-worker", nargs=2, metavar=("REPO", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.naive_worker:
        naive_worker(*args.naive_worker)
        return 0
    if not args.repo and not args.embed_only:
        ap.error("give --repo or --embed-only")
    settings = load_settings(args.settings)
    questions, refs = None, {}
    if args.questions and args.references:
        questions = json.loads(Path(args.questions).read_text())["questions"]
        refs = {a["id"]: a["answer"]
                for a in json.loads(Path(args.references).read_text())["answers"]}
    queries = [q["question"] for q in (questions or [])][:20] or [
        "how is the solver implemented", "where are boundary conditions applied",
        "which class stores particles", "how is data exchanged between ranks"]
    con = Console()
    backends = args.backends.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        rows, index = {}, Path(args.embed_only) if args.embed_only else None
        if args.repo:
            con.print(cpu_facts())
            base = naive(Path(args.repo), Path(tmp)) if args.naive else None
            if base:
                con.print("naive", base)
            for b in backends:
                keep = Path(args.keep) / b.replace(":", "-") if args.keep else None
                rows[b], index = ingest(Path(args.repo), settings, b, args.header, questions,
                                        refs, Path(tmp), keep)
                con.print(b, rows[b])
            _render_ingest(con, args.repo, rows, backends)
            if base:
                _render_naive(con, base, rows, backends)
        if args.embed_sample and index is not None:
            thr = embed_throughput(index, args.embed_sample, queries)
            _render_throughput(con, thr)
    return 0


def _render_ingest(con, repo, rows, backends) -> None:
    t = Table(title=f"ingest of {repo} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    t.add_column("measure")
    for b in backends:
        t.add_column(f"backend {b}", justify="right")

    def add(label, fn):
        t.add_row(label, *[fn(rows[b]) for b in backends])

    add("backend recorded in the manifest", lambda r: r["backend_recorded"])
    add("files / records", lambda r: r["files_records"])
    for stage in rows[backends[0]]["stages"]:
        add(f"full ingest: {stage} s", lambda r, s=stage: f"{r['stages'].get(s, 0):.2f}")
    add("full ingest: wall s (incl. model load)", lambda r: f"{r['full_s']:.1f}")
    add("full ingest: CPU s", lambda r: f"{r['full_cpu_s']:.1f}")
    add("index size MiB", lambda r: f"{r['size_mib']:.1f}")
    add("rebuild, nothing changed: s / embedded", lambda r: f"{r['same_s']:.2f} / "
        f"{r['same_embedded']}")
    add("re-ingest after one header edit (warm process) s", lambda r: f"{r['edit_s']:.2f}")
    add("  what changed", lambda r: r["edit"])
    if "p50_ms" in rows[backends[0]]:
        add("warm query p50 / p95 ms", lambda r: f"{r['p50_ms']} / {r['p95_ms']}")
        add("evidence-file recall@5 / @10", lambda r: r["recall"])
    con.print(t)


def _render_naive(con, base, rows, backends) -> None:
    t = Table(title=f"full ingest against the naive dense baseline, same run ({cpu_facts()})")
    for c in ("build", "vectors", "wall s", "CPU s", "load avg before / after",
              "wall / naive", "CPU / naive"):
        t.add_column(c, justify="right")
    t.add_row(f"naive: {base['windows']} windows of {NAIVE_LINES} lines, torch fp32, "
              f"{base['max_seq_length']} tokens (+ imports {base['import_s']:.1f} s)",
              str(base["windows"]), f"{base['full_s']:.1f}", f"{base['full_cpu_s']:.1f}",
              f"{base['load']:.1f} / {base['load_after']:.1f}", "1.00", "1.00")
    for b in backends:
        r = rows[b]
        t.add_row(f"ours, {r['backend_recorded']}", str(r["embedded"]),
                  f"{r['full_s']:.1f}", f"{r['full_cpu_s']:.1f}",
                  f"{r['load']:.1f} / {r['load_after']:.1f}",
                  f"{r['full_s'] / base['full_s']:.2f}",
                  f"{r['full_cpu_s'] / base['full_cpu_s']:.2f}")
    con.print(t)


def _render_throughput(con, thr) -> None:
    t = Table(title=f"embedding throughput, {thr['n']} index texts, {thr['threads']} threads")
    for c in ("backend", "texts/s", "CPU ms/text", "x torch", "min cos to torch",
              "top-10 agreement"):
        t.add_column(c, justify="right")
    base = thr["torch fp32"]["texts_per_s"]
    for label, r in thr.items():
        if isinstance(r, dict):
            t.add_row(label, f"{r['texts_per_s']:.1f}", f"{r['cpu_ms_per_text']:.1f}",
                      f"{r['texts_per_s'] / base:.2f}", f"{r['min_cos']:.5f}",
                      f"{r['top10_agreement']:.3f}")
    con.print(t)


if __name__ == "__main__":
    sys.exit(main())
