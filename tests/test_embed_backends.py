"""Embedding backends and precisions with the packaged MiniLM model: torch float32 / bf16 and
ONNX Runtime float32 / int8 must give retrieval-equivalent vectors, distinct model ids, and
clear errors for impossible combinations. The ONNX tests skip where the [onnx] extra is absent."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.settings import EmbeddingSettings, Settings
from codeteacher.embedding import load_embedder, model_id, resolve

MINIPIC = Path(__file__).resolve().parents[1] / "src" / "codeteacher" / "demo" / "minipic"
SEQ = 128

needs_onnx = pytest.mark.skipif(
    not (importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx")),
    reason="embedding.backend 'onnx' needs the [onnx] extra (onnxruntime, onnx): not installed")


def es(**kw) -> EmbeddingSettings:
    return EmbeddingSettings(**{"max_seq_length": SEQ, "quantize": "none", "backend": "torch",
                                **kw})


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """Realistic inputs: 40-line windows of the sample app's sources, plus short queries."""
    out = []
    for f in sorted(MINIPIC.rglob("*")):
        if f.suffix in (".cpp", ".hpp", ".h", ".md") and f.is_file():
            lines = f.read_text(errors="replace").splitlines()
            out += [f"{f.name}\n" + "\n".join(lines[i:i + 40]) for i in range(0, len(lines), 40)]
    assert len(out) >= 10, "the sample app has too few sources"
    return out[:48] + ["how are particles pushed?", "where is the field solver"]


@pytest.fixture(scope="module")
def reference(texts) -> np.ndarray:
    return load_embedder(es()).embed(texts)


def _check_unit_rows(vecs: np.ndarray, n: int) -> None:
    assert vecs.dtype == np.float32 and vecs.shape == (n, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)


def test_model_ids_name_precision_and_int8_recipe():
    ids = {model_id(es(backend=b, quantize=q))
           for b, q in [("torch", "none"), ("torch", "int8"), ("torch", "bf16"),
                        ("onnx", "int8")]}
    assert len(ids) == 4
    # the torch ids are those of existing indexes
    assert model_id(es()) == f"packaged:all-MiniLM-L6-v2@{SEQ}"
    assert model_id(es(quantize="int8")) == f"packaged:all-MiniLM-L6-v2@{SEQ}+int8"
    assert model_id(es(backend="onnx", quantize="int8")) == \
        f"packaged:all-MiniLM-L6-v2@{SEQ}+onnx+int8"
    # float32 vectors are the same whichever backend computes them: one id, shared caches
    assert model_id(es(backend="onnx")) == model_id(es(backend="torch"))


def test_settings_accept_backend():
    s = Settings.model_validate({"embedding": {"backend": "onnx", "quantize": "int8"}})
    assert s.embedding.backend == "onnx"
    assert Settings().embedding.backend == "auto"
    assert resolve(Settings().embedding).backend in ("torch", "onnx")


def test_query_backend_does_not_change_the_index_signature():
    a = Settings.model_validate({"embedding": {"query_backend": "torch"}})
    assert a.index_signature() == Settings().index_signature()
    assert Settings.model_validate({"embedding": {"backend": "torch"}}).index_signature() != \
        Settings().index_signature()


@pytest.mark.parametrize("kw, words", [
    ({"backend": "tensorflow"}, "unknown embedding.backend"),
    ({"backend": "onnx", "quantize": "bf16"}, "not available with backend 'onnx'"),
    ({"quantize": "int4"}, "not available with backend 'torch'"),
])
def test_impossible_combinations_are_user_errors(kw, words):
    with pytest.raises(UserError, match=words):
        load_embedder(es(**kw))


def test_torch_bf16_matches_float32(texts, reference):
    emb = load_embedder(es(quantize="bf16"))
    vecs = emb.embed(texts)
    _check_unit_rows(vecs, len(texts))
    cos = (vecs * reference).sum(1)
    assert cos.min() >= 0.99, cos.min()
    assert emb.model_id.endswith("+bf16")


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    """A private export cache, so that the test exercises the export itself."""
    root = tmp_path_factory.mktemp("ct-cache")
    old = os.environ.get("CODETEACHER_CACHE_DIR")
    os.environ["CODETEACHER_CACHE_DIR"] = str(root)
    yield root
    if old is None:
        os.environ.pop("CODETEACHER_CACHE_DIR", None)
    else:
        os.environ["CODETEACHER_CACHE_DIR"] = old


@needs_onnx
@pytest.mark.parametrize("quantize, min_cos, single_cos", [("none", 0.999, 0.9999),
                                                         ("int8", 0.97, 0.97)])
def test_onnx_matches_torch_float32(onnx_cache, texts, reference, quantize, min_cos, single_cos):
    from codeteacher.embedding.onnx import OnnxEmbedder

    settings = es(backend="onnx", quantize=quantize)
    emb = OnnxEmbedder(settings)
    vecs = emb.embed(texts)
    _check_unit_rows(vecs, len(texts))
    cos = (vecs * reference).sum(1)
    assert cos.min() >= min_cos, (quantize, cos.min())
    # a query alone (int8: activations are quantized per batch, so only close)
    one = emb.embed([texts[0]])
    assert float(one[0] @ vecs[0]) >= single_cos
    assert emb.model_id == model_id(settings)
    assert ("+onnx" in emb.model_id) == (quantize == "int8")

    # exported once, atomically: one finished folder per quantization, no temporary leftovers
    entries = sorted((onnx_cache / "onnx").iterdir())
    assert all(not p.name.startswith(".") for p in entries), entries
    folder = next(p for p in entries if f"-{quantize}-" in p.name)
    assert {p.name for p in folder.iterdir()} == {"model.onnx", "tokenizer.json", "meta.json"}
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    again = OnnxEmbedder(settings)  # a second process would do the same: reuse, no export
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp
    assert np.allclose(again.embed(texts[:4]), emb.embed(texts[:4]), atol=1e-5)


@needs_onnx
def test_onnx_damaged_cache_and_gpu_device_are_user_errors(onnx_cache):
    from codeteacher.embedding.onnx import OnnxEmbedder, ensure_exported

    settings = es(backend="onnx")
    folder = ensure_exported(settings)
    model = folder / "model.onnx"
    good = model.read_bytes()
    try:
        model.write_bytes(b"not a model")
        with pytest.raises(UserError, match="delete that folder"):
            OnnxEmbedder(settings)
    finally:
        model.write_bytes(good)
    with pytest.raises(UserError, match="CPU only"):
        OnnxEmbedder(es(backend="onnx", device="cuda"))
