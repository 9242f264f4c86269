"""openai backend: any OpenAI-compatible chat endpoint (llama.cpp server, vLLM serve, Ollama, ...).

Requests go to POST {base_url}/chat/completions with httpx. Connection errors, timeouts, HTTP 429
and 5xx are retried with exponential backoff honouring Retry-After (contracts/http); when
retries run out the backend raises UserError naming the URL (the server is down or overloaded: going on would only fail every request). A
batch runs `concurrency` requests in parallel. Token counts are estimated (no tokenizer here).
"""
from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

from ..contracts.errors import UserError
from ..contracts.http import RetriesExhausted, send_with_retries
from ..contracts.settings.generation import BackendSettings
from .base import ChatRequest, Generation, first_line

BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0


class OpenAIGenerator:
    name = "openai"

    def __init__(self, cfg: BackendSettings):
        if not cfg.base_url.startswith(("http://", "https://")):
            raise UserError(f"generation base_url must start with http:// or https://: "
                            f"{cfg.base_url}")
        self.url = cfg.base_url.rstrip("/") + "/chat/completions"
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=cfg.timeout_s, headers=headers)
        self._cfg = cfg
        self.model_id = f"{self.name}:{cfg.model}"  # == model_id_for(cfg)
        self.context_size = cfg.context_size

    def count_tokens(self, text: str) -> int:
        # Code tokenises at ~3-4 characters per token; 3 over-estimates, so prompts still fit.
        return math.ceil(len(text) / 3)

    def _payload(self, req: ChatRequest) -> dict:
        payload = {"model": self._cfg.model, "messages": req.messages,
                   "max_tokens": req.max_tokens, "temperature": req.temperature,
                   "seed": self._cfg.seed}
        if req.stop:
            payload["stop"] = req.stop
        return payload

    def stream(self, req: ChatRequest, on_text: Callable[[str], None]) -> Generation:
        """One request with `stream: true` (server-sent events); each piece of text goes to
        `on_text` as it arrives. Failures before the first piece are retried like _post."""
        payload = {**self._payload(req), "stream": True}
        pieces: list[str] = []
        reason, problem = "stop", ""
        for attempt in range(self._cfg.retries + 1):
            if attempt:
                time.sleep(min(MAX_BACKOFF_S, BACKOFF_S * 2 ** (attempt - 1)))
            try:
                with self._client.stream("POST", self.url, json=payload) as resp:
                    if resp.status_code == 429 or resp.status_code >= 500:
                        problem = f"HTTP {resp.status_code}"
                        continue
                    if resp.status_code >= 400:
                        resp.read()
                        return self._parse(resp)
                    for line in resp.iter_lines():
                        data = line[5:].strip() if line.startswith("data:") else ""
                        if data == "[DONE]":
                            break
                        try:
                            choice = json.loads(data)["choices"][0]
                        except (ValueError, KeyError, IndexError, TypeError):
                            continue
                        text = (choice.get("delta") or {}).get("content") or ""
                        if text:
                            pieces.append(text)
                            on_text(text)
                        if choice.get("finish_reason") == "length":
                            reason = "length"
                break
            except httpx.TimeoutException:
                problem = f"timed out after {self._cfg.timeout_s:g} s"
            except httpx.TransportError as exc:
                problem = first_line(exc)
            if pieces:  # a stream cut off midway: keep what came
                reason = "length"
                break
        else:
            raise UserError(f"LLM server {self.url} failed after {self._cfg.retries + 1} "
                            f"attempt(s): {problem}")
        tokens_in = sum(self.count_tokens(m["content"]) for m in req.messages)
        return Generation(text="".join(pieces).strip(), tokens_in=tokens_in,
                          tokens_out=len(pieces), finish_reason=reason)

    def _post(self, req: ChatRequest) -> Generation:
        payload = self._payload(req)
        try:
            resp = send_with_retries(lambda: self._client.post(self.url, json=payload),
                                     retries=self._cfg.retries, backoff_s=BACKOFF_S,
                                     max_backoff_s=MAX_BACKOFF_S)
        except RetriesExhausted as exc:
            if exc.response is not None:
                problem = f"HTTP {exc.response.status_code}"
            elif isinstance(exc.error, httpx.TimeoutException):
                problem = f"timed out after {self._cfg.timeout_s:g} s"
            else:
                problem = first_line(exc.error)
            raise UserError(f"LLM server {self.url} failed after {exc.attempts} "
                            f"attempt(s): {problem}") from None
        return self._parse(resp)

    def _parse(self, resp: httpx.Response) -> Generation:
        body = resp.text[:300].replace("\n", " ")
        if resp.status_code in (401, 403, 404):
            raise UserError(f"LLM server {self.url} answered HTTP {resp.status_code}: {body}")
        if resp.status_code >= 400:
            reason = "context_overflow" if "context" in body.lower() else "error"
            return Generation(finish_reason=reason, error=f"HTTP {resp.status_code}: {body}")
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError):
            return Generation(finish_reason="error", error=f"malformed response: {body}")
        usage = data.get("usage") or {}
        return Generation(text=text.strip(), tokens_in=usage.get("prompt_tokens", 0),
                          tokens_out=usage.get("completion_tokens", 0),
                          finish_reason="length" if choice.get("finish_reason") == "length"
                          else "stop")

    def generate(self, requests: list[ChatRequest]) -> list[Generation]:
        if len(requests) <= 1 or self._cfg.concurrency == 1:
            return [self._post(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self._cfg.concurrency, len(requests))) as pool:
            return list(pool.map(self._post, requests))

    def close(self) -> None:
        self._client.close()
