"""vllm backend: offline batched generation on a CUDA GPU with vLLM's `LLM.chat`.

vLLM is imported only when this backend is chosen. The whole batch goes to vLLM at once (its
scheduler does continuous batching); prompts longer than max_model_len are answered as
"context_overflow" up front, because vLLM would reject the entire batch for one of them.
"""
from __future__ import annotations

from pathlib import Path

from ..contracts.errors import UserError
from ..contracts.settings.generation import PACKAGED_GGUF, BackendSettings
from .base import ChatRequest, Generation, first_line, resolve_gguf


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


class VLLMGenerator:
    name = "vllm"

    def __init__(self, cfg: BackendSettings):
        if not cuda_available():
            raise UserError("the vllm backend needs a CUDA GPU, and none is visible")
        try:
            from vllm import LLM, SamplingParams
        except ImportError:
            raise UserError("vllm is not installed (pip install vllm on a GPU node)") from None
        model = cfg.model
        if model == PACKAGED_GGUF or model.endswith(".gguf"):
            model = str(resolve_gguf(model))
        elif Path(model).expanduser().exists():
            model = str(Path(model).expanduser())
        try:
            self._llm = LLM(model=model, max_model_len=cfg.context_size, seed=cfg.seed)
            self._tok = self._llm.get_tokenizer()
        except Exception as exc:  # noqa: BLE001 - any load failure is a configuration problem
            raise UserError(f"vllm cannot load model '{cfg.model}': {first_line(exc)}") from None
        self._params = SamplingParams
        self._cfg = cfg
        self.model_id = f"{self.name}:{cfg.model}"  # == model_id_for(cfg)
        self.context_size = cfg.context_size

    def count_tokens(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False))

    def _prompt_len(self, req: ChatRequest) -> int:
        text = self._tok.apply_chat_template(req.messages, tokenize=False,
                                             add_generation_prompt=True)
        return len(self._tok.encode(text, add_special_tokens=False))

    def generate(self, requests: list[ChatRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        todo: list[int] = []
        for i, req in enumerate(requests):
            if self._prompt_len(req) >= self.context_size:
                results[i] = Generation(finish_reason="context_overflow",
                                        error="prompt exceeds max_model_len")
            else:
                todo.append(i)
        if todo:
            params = [self._params(max_tokens=requests[i].max_tokens,
                                   temperature=requests[i].temperature,
                                   stop=requests[i].stop or None, seed=self._cfg.seed,
                                   repetition_penalty=self._cfg.repeat_penalty) for i in todo]
            outs = self._llm.chat([requests[i].messages for i in todo], sampling_params=params,
                                  use_tqdm=False)
            for i, out in zip(todo, outs):
                comp = out.outputs[0]
                results[i] = Generation(
                    text=comp.text.strip(), tokens_in=len(out.prompt_token_ids or []),
                    tokens_out=len(comp.token_ids),
                    finish_reason="length" if comp.finish_reason == "length" else "stop")
        return [r for r in results if r is not None]

    def close(self) -> None:
        self._llm = None
