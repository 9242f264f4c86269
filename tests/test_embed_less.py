"""Cheaper ingest without other vectors: batches ordered by token count (padding masked out),
one vector per distinct text, folder summaries not embedded, and the precision `auto` picks
for this CPU recorded in the index and used again for its questions. Real embedder, real
stage files; the ONNX tests skip where onnxruntime is absent."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from codeteacher.api import Engine
from codeteacher.contracts.jsonio import read_json, write_jsonl
from codeteacher.contracts.models import Chunk
from codeteacher.contracts.settings import EmbeddingSettings, Settings
from codeteacher.embedding import load_embedder, model_id, onnx_available, resolve
from codeteacher.embedding.base import vector_family
from codeteacher.index import layout as L
from codeteacher.ingest.stages import stage_embed

needs_onnx = pytest.mark.skipif(not onnx_available(), reason="onnxruntime is not installed")


def _flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@needs_onnx
def test_onnx_vectors_do_not_depend_on_batch_order_or_padding(minipic_src):
    emb = load_embedder(EmbeddingSettings(backend="onnx", quantize="none"))
    texts = [f.read_text(errors="replace")[:n] for f, n in
             zip(sorted(minipic_src.rglob("*.cpp")), (30, 4000, 200, 900, 60, 2500, 12, 1500))]
    texts += ["a", "how are particles pushed?"]
    together = emb.embed(texts)
    backwards = emb.embed(texts[::-1])[::-1]
    alone = np.vstack([emb.embed([t]) for t in texts])
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-4)
    # the shortest text shares a batch with 128-token ones: its padding must not leak in
    assert (together * alone).sum(1).min() > 0.99999
    assert (together * backwards).sum(1).min() > 0.99999


def _chunk(cid: str, text: str, kind: str = "function", path: str = "src/a.cpp") -> Chunk:
    return Chunk(id=cid, path=path, kind=kind, start_line=1, end_line=3, name="f",
                 qualified_name="f", text=text, scope="src")


def test_identical_texts_are_embedded_once(tmp_path):
    body = "void f() {\n  push(particles, dt);\n}"
    chunks = [_chunk("src/a.cpp#function:f@1", body), _chunk("src/a.cpp#function:f@1~2", body),
              _chunk("src/a.cpp#function:g@9", body.replace("push", "deposit")),
              _chunk("module:src", "Module (folder) src: 1 indexed file.", kind="module",
                     path="src")]
    write_jsonl(tmp_path / "chunks.jsonl", chunks)
    write_jsonl(tmp_path / "entities.jsonl", [])
    settings = Settings()
    out = tmp_path / "embedded"
    report = stage_embed(tmp_path / "chunks.jsonl", tmp_path / "entities.jsonl", out, settings)
    keys, vectors = read_json(out / L.VECTOR_KEYS), np.load(out / L.VECTORS)
    assert report == {"records": 4, "embedded": 2, "reused": 0, "skipped": 1}
    assert keys[0] == keys[1] != keys[2] and keys[3] == ""  # the folder summary is skipped
    assert np.array_equal(vectors[0], vectors[1]) and float(vectors[0] @ vectors[2]) < 0.999
    assert np.linalg.norm(vectors[3]) == 0 and np.allclose(np.linalg.norm(vectors[:3], axis=1), 1)
    again = stage_embed(tmp_path / "chunks.jsonl", tmp_path / "entities.jsonl",
                        tmp_path / "again", settings, cache=out)
    assert again == {"records": 4, "embedded": 0, "reused": 3, "skipped": 1}
    assert np.array_equal(np.load(tmp_path / "again" / L.VECTORS), vectors)


def test_auto_precision_follows_this_cpu():
    amx = "amx_bf16" in _flags()
    onnx = resolve(EmbeddingSettings(backend="onnx", quantize="auto"))
    torch = resolve(EmbeddingSettings(backend="torch", quantize="auto", device="cpu"))
    # int8 is never chosen for the user, VNNI or not: it costs recall (eval/README.md)
    assert onnx.quantize == "none" and model_id(onnx) == f"{onnx.model}@{onnx.max_seq_length}"
    assert torch.quantize == ("bf16" if amx else "none")
    # an explicit choice is kept whatever the CPU
    assert resolve(EmbeddingSettings(backend="onnx", quantize="int8")).quantize == "int8"
    assert resolve(EmbeddingSettings(backend="onnx", quantize="none")).quantize == "none"


def test_default_index_records_its_precision_and_queries_with_it(minipic_index):
    manifest = json.loads((minipic_index / L.MANIFEST).read_text())
    resolved = resolve(Settings().embedding)
    assert manifest["embedding"]["quantize"] == resolved.quantize
    assert manifest["embedding"]["backend"] == resolved.backend
    assert manifest["model_id"] == model_id(resolved)
    # a session that would embed another way still queries the index its own way
    local = Settings.model_validate({"embedding": {"quantize": "none", "backend": "torch"}})
    engine = Engine.load(minipic_index, local)
    # (same vectors: an int8 index by its own recipe; a bf16 one, on AMX CPUs, by float32
    # queries of the same family, cosine >= 0.999)
    assert vector_family(engine.embedder.model_id) == vector_family(manifest["model_id"])
    assert engine.embedder.model_id.split("@")[1].endswith("+int8") == \
        manifest["model_id"].endswith("+int8")
    # folder summaries carry no vector, yet a question naming the folder still finds it
    records = engine.store.records
    modules = [i for i, r in enumerate(records) if r.kind == "module"]
    assert modules and not np.asarray(engine.store.vectors[modules]).any()
    hits = engine.search("what does the include/minipic folder hold", k=5)
    assert any(h.chunk.kind == "module" and h.chunk.path == "include/minipic" for h in hits)


@needs_onnx
def test_setup_export_covers_the_precision_ingest_will_use(tmp_path):
    """`python -m codeteacher.embedding.onnx` (scripts/setup.sh) exports float32 and, where the
    settings ask for ONNX int8, the int8 recipe: no later query needs torch to export it."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "codeteacher.embedding.onnx"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CODETEACHER_SETTINGS": ""})
    assert proc.returncode == 0, proc.stderr[-1000:]
    folders = [Path(line) for line in proc.stdout.split()]
    assert all((f / "model.onnx").is_file() for f in folders)
    int8 = resolve(Settings().embedding).quantize == "int8"
    assert [("-int8-" in f.name) for f in folders] == [False] + ([True] if int8 else [])
