"""The query path without torch, and indexes that either backend built and either queries.

Float32 vectors from torch (sentence-transformers) and ONNX Runtime are the same vectors: an
index embedded by one is searched with questions embedded by the other, with the same hits.
A fresh `ask` process must not import torch, transformers or sentence-transformers (seconds of
start-up on a laptop) nor the ingest-only libraries. Skips where onnxruntime is absent."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from codeteacher.api import Engine
from codeteacher.contracts.settings import EmbeddingSettings, Settings
from codeteacher.embedding import onnx_available, query_settings
from codeteacher.ingest.build import build_index

pytestmark = pytest.mark.skipif(not onnx_available(), reason="onnxruntime is not installed")

HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "bm25s", "scipy",
         "tree_sitter", "tree_sitter_cpp", "llama_cpp", "httpx")
QUESTIONS = ["how are particles pushed in time?", "where is charge deposited on the mesh",
             "which solver handles the Poisson equation", "halo exchange between ranks",
             "what does the configuration hold"]
SUBSET = ["include/minipic/pusher.hpp", "include/minipic/poisson.hpp", "src/cg_solver.cpp",
          "src/deposit.cpp", "README.md"]


def _settings(**embedding) -> Settings:
    # float32 on both backends ('auto' may pick int8 for ONNX, whose vectors differ)
    return Settings.model_validate({"embedding": {"quantize": "none", **embedding}})


def test_fresh_ask_process_imports_no_torch(minipic_index, tmp_path):
    from codeteacher.embedding.onnx import ensure_exported

    # set-up's job (a no-op when present): the model that embeds this index's questions
    recorded = json.loads((minipic_index / "manifest.json").read_text())["embedding"]
    ensure_exported(query_settings(recorded, EmbeddingSettings()))
    probe = ("import json, sys\n"
             "from codeteacher.shells.cli import ask_main\n"
             f"rc = ask_main(['how are particles pushed?', '--index', {str(minipic_index)!r},"
             " '--json'])\n"
             f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
             "print('HEAVY=' + json.dumps(heavy), file=sys.stderr)\n"
             "sys.exit(rc)\n")
    # run outside the checkout: its runtime_settings.json answers with an LLM, and this is the
    # retrieval-only cold path (the library defaults: no answer model)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env={**os.environ, "CODETEACHER_DEBUG": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY="))
    assert json.loads(line[len("HEAVY="):]) == []
    result = json.loads(proc.stdout)
    assert result["evidence"], "a cold ask found nothing"
    # the first answer of a process says what it waited for
    assert {"load_index", "load_model", "retrieve", "total"} <= set(result["timings_ms"])


def test_query_settings_follow_the_index_not_the_local_backend():
    recorded = EmbeddingSettings(backend="torch", quantize="none").model_dump(mode="json")
    local = EmbeddingSettings(max_seq_length=256, query_backend="auto")
    q = query_settings(recorded, local)
    assert (q.backend, q.quantize, q.max_seq_length) == ("onnx", "none", 128)
    assert query_settings(recorded, local.model_copy(update={"query_backend": "torch"})
                          ).backend == "torch"
    bf16 = {**recorded, "quantize": "bf16"}  # an index built on an AMX machine
    assert query_settings(bf16, local).quantize == "none"
    int8 = {**recorded, "quantize": "int8"}  # int8 recipes differ: the index's own is used
    assert query_settings(int8, local).backend == "torch"


@pytest.fixture(scope="module")
def built(tmp_path_factory, minipic_src):
    """The same files indexed once by each ingest backend."""
    out = {}
    for backend in ("torch", "onnx"):
        path = tmp_path_factory.mktemp(f"ix-{backend}") / "minipic"
        build_index(minipic_src, out=path, name="minipic", settings=_settings(backend=backend),
                    include=SUBSET)
        out[backend] = path
    return out


def test_both_ingest_backends_write_the_same_vectors(built):
    man = {b: json.loads((p / "manifest.json").read_text()) for b, p in built.items()}
    assert {b: m["embedding"]["backend"] for b, m in man.items()} == \
        {"torch": "torch", "onnx": "onnx"}, "the manifest records the backend that embedded"
    assert man["torch"]["model_id"] == man["onnx"]["model_id"]
    vt, vo = (np.load(built[b] / "vectors.npy") for b in ("torch", "onnx"))
    assert vt.shape == vo.shape and len(vt) >= 20
    live = np.linalg.norm(vt, axis=1) > 0  # skipped kinds are zero rows in both
    assert np.array_equal(live, np.linalg.norm(vo, axis=1) > 0)
    cos = (vt[live] * vo[live]).sum(1)
    assert cos.min() >= 0.999, cos.min()


@pytest.mark.parametrize("index_backend", ["torch", "onnx"])
def test_an_index_is_queried_alike_by_either_query_backend(built, index_backend):
    engines = {qb: Engine.load(built[index_backend], _settings(query_backend=qb))
               for qb in ("torch", "onnx")}
    assert type(engines["onnx"].embedder).__name__ == "OnnxEmbedder"
    assert type(engines["torch"].embedder).__name__ == "SentenceTransformerEmbedder"
    overlap = []
    for q in QUESTIONS:
        vt, vo = (engines[qb].embedder.embed([q])[0] for qb in ("torch", "onnx"))
        assert float(vt @ vo) >= 0.999, q
        top = {qb: [h.chunk.id for h in e.search(q, k=10)] for qb, e in engines.items()}
        assert top["torch"][:3] == top["onnx"][:3], q
        overlap.append(len(set(top["torch"]) & set(top["onnx"])) / max(1, len(top["torch"])))
    assert min(overlap) >= 0.9, overlap


def test_saved_bm25_scores_equal_bm25s(minipic_index):
    """The numpy reader of the saved BM25 matrix (no bm25s/scipy import on the query path)
    gives bm25s's own scores, bit for bit, for single words, phrases and unknown words."""
    import bm25s

    from codeteacher.index.lexical import LexicalIndex, SavedScores, tokenize

    ours = LexicalIndex.load(minipic_index / "bm25")
    assert isinstance(ours._r, SavedScores)
    theirs = LexicalIndex(bm25s.BM25.load(str(minipic_index / "bm25"), show_progress=False))
    vocab = sorted(t for t in ours.vocab if t)
    queries = [[t] for t in vocab[::7]] + [tokenize(q) for q in QUESTIONS] + [["zzqx-unknown"]]
    queries += [vocab[i:i + 5] for i in range(0, len(vocab), 37)]
    for toks in queries:
        a, b = ours.scores(toks), theirs.scores(toks)
        assert a.dtype == b.dtype == np.float32 and np.array_equal(a, b), toks
    assert ours.n_docs == theirs.n_docs and ours.vocab == theirs.vocab


def test_fresh_reingest_after_an_edit_imports_no_torch(fresh_minipic):
    """Where ingest resolves to ONNX (CPUs without AMX), a one-file edit re-ingested by a fresh
    `codeteacher index` process re-embeds without importing torch."""
    from codeteacher.embedding import resolve

    if resolve(Settings().embedding).backend != "onnx":
        pytest.skip("ingest resolves to torch on this machine (AMX or GPU)")
    repo, index = fresh_minipic
    header = repo / "include" / "minipic" / "pusher.hpp"
    header.write_text("// a note at the top\n" + header.read_text())
    probe = ("import json, sys\n"
             "from codeteacher.shells.cli import main\n"
             f"rc = main(['index', {str(repo)!r}, '--out', {str(index)!r}, '--name', 'minipic',"
             " '--json', '-q'])\n"
             f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY[:4]!r}))\n"
             "print('HEAVY=' + json.dumps(heavy), file=sys.stderr)\n"
             "sys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CODETEACHER_DEBUG": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["parsed"] == 1 and report["embedded"] >= 1, report
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY="))
    assert json.loads(line[len("HEAVY="):]) == []
