"""Settings of the LLM layer: one backend configuration per stage, prompt modes, stage options.

The library defaults keep indexing and the API model-free: explanations and answers both use
the backend "none" (`ask` returns its extractive answer). The shipped runtime_settings.json
answers with the local Qwen2.5-Coder-0.5B (`codeteacher models install qwen2.5-coder-0.5b`,
done by scripts/setup.sh); presets under config/settings/ choose other models and servers.

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
    model: str = Field(default=PACKAGED_GGUF, description="llama-cpp: a model name from "
                       "`codeteacher models list` (qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, "
                       f"smollm2), a .gguf path, or '{PACKAGED_GGUF}' (= smollm2); "
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
    final_answer: PromptMode = Field(default=PromptMode(template="final_answer.txt", version=2),
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
                                "context in the answer prompt (0 = sized from the model's "
                                "measured prompt speed in the catalogue times first_token_s, "
                                "else whatever the model's context leaves).")
    first_token_s: float = Field(default=3.0, gt=0, description="Seconds the model may spend "
                                 "reading the context before its first token (sizes the "
                                 "context of catalogue models when context_tokens is 0).")
    max_chunk_chars: int = Field(default=1800, ge=100, description="Characters per context "
                                 "item at most (after picking its informative lines).")
    max_items: int = Field(default=0, ge=0, description="Retrieved chunks shown at most (0 = "
                           "the catalogue's choice for the model: 2 for the 0.5B; else 6).")
    code_lines: int = Field(default=8, ge=0, description="Code lines per item: the statements "
                            "that do the work (question words, assignments, calls, returns).")
    stop: list[str] = Field(default=["\n\n\n", "```"], description="Generation stops at "
                            "these strings (small models run on into code blocks).")


class ConfidenceSettings(_Section):
    """Confidence of an answer from the retrieval evidence alone (0..1); below `low`, `ask`
    says the index holds little on the question and does not call the model."""

    enabled: bool = Field(default=True, description="Off: never abstain on evidence grounds.")
    similarity: float = Field(default=0.5, ge=0, description="Weight of the best embedding "
                              "similarity between the question and the top items (the "
                              "strongest single sign that the index holds the topic).")
    similarity_floor: float = Field(default=0.25, description="Similarity that counts as 0 "
                                    "(MiniLM cosine; unrelated code scores about this).")
    similarity_full: float = Field(default=0.55, description="Similarity that counts as 1.")
    term_support: float = Field(default=0.3, ge=0, description="Weight of the IDF-weighted "
                                "share of the question's words found in the top items (words "
                                "the index lacks weigh most: they name what is not there).")
    agreement: float = Field(default=0.1, ge=0, description="Weight of dense and BM25 agreeing "
                             "on the top items, or a named file/symbol found.")
    named: float = Field(default=0.1, ge=0, description="Weight of the share of code-like names "
                         "in the question (CamelCase, snake_case, files) that the index holds.")
    missing_name_factor: float = Field(default=0.6, ge=0, le=1, description="Confidence is "
                                       "multiplied by this when the question names something "
                                       "the index does not hold.")
    items: int = Field(default=5, ge=1, description="Top items whose words support the question.")
    low: float = Field(default=0.5, ge=0, le=1, description="Below this the answer says the "
                       "index holds little on the question (abstains).")


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
    confidence: ConfidenceSettings = Field(default_factory=ConfidenceSettings,
                                           description="How sure the retrieval evidence is, and "
                                           "below what the answer says the index holds little.")
