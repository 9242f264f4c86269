"""transformers backend: a local Hugging Face causal LM (CPU or GPU), batched `generate`.

The model is a local directory, loaded offline. The packaged GGUF also works (transformers
dequantises it; needs the `gguf` package), which is slow but gives a real CPU check.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..contracts.errors import UserError
from ..contracts.settings.generation import PACKAGED_GGUF, BackendSettings
from .base import ChatRequest, Generation, cut_at_stop, first_line, resolve_gguf


class TransformersGenerator:
    name = "transformers"

    def __init__(self, cfg: BackendSettings):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise UserError("the transformers backend needs torch and transformers") from None
        kwargs: dict = {"local_files_only": True}
        if cfg.model == PACKAGED_GGUF or cfg.model.endswith(".gguf"):
            gguf = resolve_gguf(cfg.model)
            src, kwargs["gguf_file"] = str(gguf.parent), gguf.name
        else:
            src = str(Path(cfg.model).expanduser())
            if not Path(src).is_dir():
                raise UserError(f"transformers model directory not found: {src}")
        want = cfg.device
        if want == "auto":
            want = "cuda" if torch.cuda.is_available() else "cpu"
        if want == "cuda" and not torch.cuda.is_available():
            raise UserError("generation device 'cuda' requested but no CUDA GPU is visible")
        try:
            self._tok = AutoTokenizer.from_pretrained(src, **kwargs)
            self._model = AutoModelForCausalLM.from_pretrained(
                src, dtype=torch.bfloat16 if want == "cuda" else torch.float32, **kwargs
            ).to(want).eval()
        except Exception as exc:  # noqa: BLE001 - any load failure is a configuration problem
            raise UserError(f"transformers cannot load '{cfg.model}': {first_line(exc)}") from None
        self._tok.padding_side = "left"  # decoder-only batches pad on the left
        if self._tok.pad_token is None:
            self._tok.pad_token = self._tok.eos_token
        self._torch, self._device, self._cfg = torch, want, cfg
        self.model_id = f"{self.name}:{cfg.model}"  # == model_id_for(cfg)
        self.context_size = cfg.context_size

    def count_tokens(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False))

    def _prompt(self, req: ChatRequest) -> str:
        return self._tok.apply_chat_template(req.messages, tokenize=False,
                                             add_generation_prompt=True)

    def _batch(self, reqs: list[ChatRequest]) -> list[Generation]:
        texts = [self._prompt(r) for r in reqs]
        enc = self._tok(texts, return_tensors="pt", padding=True,
                        add_special_tokens=False).to(self._device)
        sample = reqs[0].temperature > 0
        with self._torch.no_grad():
            out = self._model.generate(
                **enc, max_new_tokens=reqs[0].max_tokens, do_sample=sample,
                temperature=reqs[0].temperature if sample else None, top_p=None, top_k=None,
                repetition_penalty=self._cfg.repeat_penalty,
                pad_token_id=self._tok.pad_token_id)
        prompt_len = enc["input_ids"].shape[1]
        results = []
        for row, mask, req in zip(out, enc["attention_mask"], reqs):
            new = row[prompt_len:]
            n_out = int((new != self._tok.pad_token_id).sum())
            text, stopped = cut_at_stop(self._tok.decode(new, skip_special_tokens=True), req.stop)
            results.append(Generation(
                text=text.strip(), tokens_in=int(mask.sum()), tokens_out=n_out,
                finish_reason="length" if n_out >= req.max_tokens and not stopped else "stop"))
        return results

    def generate(self, requests: list[ChatRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple, list[int]] = {}
        for i, req in enumerate(requests):
            n_in = len(self._tok(self._prompt(req), add_special_tokens=False)["input_ids"])
            if n_in + req.max_tokens > self.context_size:
                results[i] = Generation(finish_reason="context_overflow",
                                        error=f"prompt of {n_in} tokens exceeds the context")
            else:
                groups.setdefault((req.max_tokens, req.temperature), []).append(i)
        for idx in groups.values():
            for start in range(0, len(idx), self._cfg.concurrency):
                part = idx[start:start + self._cfg.concurrency]
                for i, gen in zip(part, self._batch([requests[i] for i in part])):
                    results[i] = gen
        return [r for r in results if r is not None]

    def close(self) -> None:
        self._model = None
