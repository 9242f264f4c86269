"""sentence-transformers on PyTorch (`embedding.backend: "torch"`)."""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

from ..contracts.errors import UserError
from ..contracts.settings import EmbeddingSettings
from .base import _check, _device, model_id, normalized, resolve_model_path


def _quantize_int8(model):
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


class SentenceTransformerEmbedder:
    def __init__(self, settings: EmbeddingSettings):
        _check(settings)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        path = resolve_model_path(settings.model)
        try:
            self._model = SentenceTransformer(path, device=_device(settings.device),
                                              local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - any load failure is a configuration problem
            raise UserError(f"cannot load embedding model '{settings.model}': "
                            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                            ) from None
        self._model.max_seq_length = settings.max_seq_length
        if settings.quantize == "int8":
            self._model = _quantize_int8(self._model)
        elif settings.quantize == "bf16":
            # Weights and activations in bfloat16: on CPUs with AMX (Xeon 4th gen+) ~3.5x fewer
            # CPU-seconds than float32 at cosine >= 0.999 to it; no gain with AVX512-BF16 alone,
            # ~3x slower where bf16 is emulated. Rows are renormalised in float32 below.
            import torch

            self._model = self._model.to(torch.bfloat16)
        self.batch_size = settings.batch_size
        self.model_id = model_id(settings)
        dim_of = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(dim_of())

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1:  # queries: repeated ones (agents, evaluation) cost nothing
            return self._embed_one(texts[0]).reshape(1, -1)
        return self._encode(texts, progress)

    @lru_cache(maxsize=1024)
    def _embed_one(self, text: str) -> np.ndarray:
        vec = self._encode([text], False)[0]
        vec.setflags(write=False)
        return vec

    def _encode(self, texts: list[str], progress: bool) -> np.ndarray:
        vecs = self._model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=progress)
        return normalized(vecs)
