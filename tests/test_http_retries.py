"""contracts/http: the one retry rule (backoff, Retry-After, what is retried)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest

from codeteacher.contracts.http import RetriesExhausted, retry_delay, send_with_retries


def test_retry_delay_backoff_and_retry_after():
    assert [retry_delay(a, None, 0.5, 8) for a in range(6)] == [0.5, 1, 2, 4, 8, 8]
    assert retry_delay(0, "3", 0.5, 8) == 3.0 and retry_delay(0, "3600", 0.5, 8) == 8
    soon = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=5), usegmt=True)
    assert 3 <= retry_delay(0, soon, 0.5, 8) <= 5
    assert retry_delay(1, "soon-ish", 0.5, 8) == 1.0  # unreadable header: the backoff


def test_send_with_retries_on_a_real_transport():
    """httpx's MockTransport stands in for the network (third-party), not for our code."""
    script = [httpx.Response(503), httpx.Response(429, headers={"Retry-After": "2"}),
              httpx.Response(404)]
    client = httpx.Client(transport=httpx.MockTransport(lambda req: script.pop(0)))
    waits, before = [], []
    resp = send_with_retries(lambda: client.get("http://x/"), retries=3, backoff_s=0.25,
                             max_backoff_s=8, sleep=waits.append, before=lambda: before.append(1))
    assert resp.status_code == 404 and waits == [0.25, 2.0] and len(before) == 3

    def refuse(request):
        raise httpx.ConnectError("refused", request=request)

    client = httpx.Client(transport=httpx.MockTransport(refuse))
    with pytest.raises(RetriesExhausted) as info:
        send_with_retries(lambda: client.get("http://x/"), retries=1, backoff_s=0.1,
                          max_backoff_s=1, sleep=waits.append)
    assert info.value.attempts == 2 and isinstance(info.value.error, httpx.ConnectError)
