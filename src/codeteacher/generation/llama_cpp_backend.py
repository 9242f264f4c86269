"""llama-cpp backend: a local GGUF model through llama-cpp-python, one request at a time."""
from __future__ import annotations

import os
import threading
from collections.abc import Callable

from ..contracts.errors import UserError
from ..contracts.settings.generation import BackendSettings
from .base import ChatRequest, Generation, first_line, resolve_gguf


class LlamaCppGenerator:
    name = "llama-cpp"

    def __init__(self, cfg: BackendSettings):
        path = resolve_gguf(cfg.model)  # checks existence and the GGUF magic before loading
        try:
            from llama_cpp import Llama
        except ImportError:
            raise UserError("llama-cpp-python is not installed: see scripts/setup.sh") from None
        # 0: llama.cpp's defaults (half the cores generate, all of them process the prompt).
        threads = cfg.n_threads or None
        try:
            self._llm = Llama(model_path=str(path), n_ctx=cfg.context_size, n_threads=threads,
                              n_threads_batch=threads or os.cpu_count(), seed=cfg.seed,
                              verbose=False)
        except Exception as exc:  # noqa: BLE001 - llama raises ValueError/RuntimeError on bad files
            raise UserError(f"cannot load GGUF model {path}: {first_line(exc)}") from None
        self.model_id = f"{self.name}:{cfg.model}"  # == model_id_for(cfg)
        self.context_size = cfg.context_size
        self._cfg = cfg
        self._lock = threading.Lock()  # a Llama object is not thread-safe

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _one(self, req: ChatRequest) -> Generation:
        try:
            out = self._llm.create_chat_completion(
                messages=req.messages, max_tokens=req.max_tokens, temperature=req.temperature,
                stop=req.stop or None, seed=self._cfg.seed,
                repeat_penalty=self._cfg.repeat_penalty)
        except ValueError as exc:
            msg = first_line(exc)
            reason = "context_overflow" if "context window" in msg else "error"
            return Generation(finish_reason=reason, error=msg)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Generation(text=(choice["message"].get("content") or "").strip(),
                          tokens_in=usage.get("prompt_tokens", 0),
                          tokens_out=usage.get("completion_tokens", 0),
                          finish_reason="length" if choice.get("finish_reason") == "length"
                          else "stop")

    def stream(self, req: ChatRequest, on_text: Callable[[str], None]) -> Generation:
        """Generate one answer, handing each piece of text to `on_text` as it is written."""
        pieces: list[str] = []
        reason = "stop"
        with self._lock:
            try:
                for chunk in self._llm.create_chat_completion(
                        messages=req.messages, max_tokens=req.max_tokens,
                        temperature=req.temperature, stop=req.stop or None,
                        seed=self._cfg.seed, repeat_penalty=self._cfg.repeat_penalty,
                        stream=True):
                    choice = chunk["choices"][0]
                    text = choice["delta"].get("content") or ""
                    if text:
                        pieces.append(text)
                        on_text(text)
                    if choice.get("finish_reason") == "length":
                        reason = "length"
            except ValueError as exc:
                msg = first_line(exc)
                return Generation(finish_reason="context_overflow" if "context window" in msg
                                  else "error", error=msg)
        text = "".join(pieces)
        tokens_in = sum(self.count_tokens(m["content"]) + 4 for m in req.messages)
        return Generation(text=text.strip(), tokens_in=tokens_in, tokens_out=len(pieces),
                          finish_reason=reason)

    def generate(self, requests: list[ChatRequest]) -> list[Generation]:
        with self._lock:
            return [self._one(r) for r in requests]

    def close(self) -> None:
        llm, self._llm = getattr(self, "_llm", None), None
        if llm is not None:
            llm.close()
