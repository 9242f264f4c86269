"""LLM generation backends behind one protocol (see base.py).

Backends are imported only when chosen, so `import codeteacher.generation` stays cheap and
works without llama-cpp-python, vLLM or a GPU.
"""
from __future__ import annotations

import os

# OpenMP workers spin while idle by default. With torch (embeddings) and ggml (llama-cpp) in one
# process, or on a busy machine, spinning threads starve the ones doing work: llama-cpp
# measured 1.5-2x slower here. Each OpenMP runtime reads this once, when it loads, so it is
# set on import (codeteacher.settings imports this package before anything loads torch).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ..contracts.errors import UserError  # noqa: E402
from ..contracts.settings.generation import (  # noqa: E402
    BackendSettings,
    GenerationSettings,
    PromptMode,
    PromptSettings,
)
from .base import ChatRequest, Generation, Generator, packaged_gguf_path, resolve_gguf  # noqa: E402

__all__ = ["BackendSettings", "ChatRequest", "Generation", "GenerationSettings", "Generator",
           "PromptMode", "PromptSettings", "make_generator", "model_id_for", "packaged_gguf_path",
           "resolve_gguf"]


class NoneGenerator:
    """The 'none' backend: callers check `name == "none"` and skip generation."""

    name = "none"
    model_id = ""
    context_size = 0

    def count_tokens(self, text: str) -> int:
        return (len(text) + 2) // 3

    def generate(self, requests: list[ChatRequest]) -> list[Generation]:
        raise UserError("LLM generation is off (backend 'none'); choose a backend in the "
                        "'generation' settings, e.g. config/settings/local-llm.json")

    def close(self) -> None:
        pass


def model_id_for(cfg: BackendSettings) -> str:
    """The id a generator for cfg reports, known without loading the model (for cache keys)."""
    return "" if cfg.backend == "none" else f"{cfg.backend}:{cfg.model}"


def make_generator(cfg: BackendSettings) -> Generator:
    """A generator for one stage's backend settings; raises UserError when it cannot load."""
    if cfg.backend == "none":
        return NoneGenerator()
    if cfg.backend == "llama-cpp":
        from .llama_cpp_backend import LlamaCppGenerator
        return LlamaCppGenerator(cfg)
    if cfg.backend == "openai":
        from .openai_backend import OpenAIGenerator
        return OpenAIGenerator(cfg)
    if cfg.backend == "vllm":
        from .vllm_backend import VLLMGenerator
        return VLLMGenerator(cfg)
    if cfg.backend == "transformers":
        from .transformers_backend import TransformersGenerator
        return TransformersGenerator(cfg)
    raise UserError(f"unknown generation backend: {cfg.backend}")
