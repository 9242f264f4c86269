"""HTTP requests with retries, for every client we have (LLM servers, paper sources).

Connection errors, timeouts, HTTP 429 and 5xx are retried with exponential backoff
(backoff_s, 2 x backoff_s, ... capped at max_backoff_s); a Retry-After header (seconds or an
HTTP date) takes the place of the backoff, capped the same way. Any other answer is returned
to the caller, which decides what it means. When the attempts run out, RetriesExhausted says
what the last attempt got.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime


class RetriesExhausted(Exception):
    """Every attempt failed; `response` (a retryable status) or `error` is the last outcome."""

    def __init__(self, attempts: int, response=None, error: Exception | None = None):
        self.attempts, self.response, self.error = attempts, response, error
        what = f"HTTP {response.status_code}" if response is not None else repr(error)
        super().__init__(f"{what} after {attempts} attempt(s)")


def retryable(status: int) -> bool:
    return status == 429 or status >= 500


def retry_delay(attempt: int, retry_after: str | None, backoff_s: float,
                max_backoff_s: float) -> float:
    """Seconds to wait after failed attempt `attempt` (0-based)."""
    delay = backoff_s * (2 ** attempt)
    if retry_after:
        try:
            delay = float(retry_after)
        except ValueError:
            try:
                delay = parsedate_to_datetime(retry_after).timestamp() - time.time()
            except (TypeError, ValueError):
                pass  # an unreadable header: keep the exponential backoff
    return max(0.0, min(delay, max_backoff_s))


def send_with_retries(send: Callable[[], object], *, retries: int, backoff_s: float,
                      max_backoff_s: float, sleep: Callable[[float], None] = time.sleep,
                      before: Callable[[], None] | None = None):
    """`send()` (an httpx request) up to retries + 1 times; returns the first response that is
    not retryable. `before` runs ahead of every attempt (request spacing, counting)."""
    import httpx

    for attempt in range(retries + 1):
        if before is not None:
            before()
        response, error = None, None
        try:
            response = send()
        except httpx.RequestError as exc:  # connect refused, reset, timeout, protocol errors
            error = exc
        if response is not None and not retryable(response.status_code):
            return response
        if attempt < retries:
            header = response.headers.get("Retry-After") if response is not None else None
            sleep(retry_delay(attempt, header, backoff_s, max_backoff_s))
    raise RetriesExhausted(retries + 1, response, error)
