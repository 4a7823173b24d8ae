"""Retries and timeouts of quiver_client. Here the server is a stand-in
(httpx.MockTransport), to answer each kind of 429 and 503 on cue; against a live
Quiver whose database fails mid-call: tests/client/test_client_runs_once.py."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest
from quiver_client import (
    AsyncQuiver,
    BadRequest,
    Quiver,
    QuiverConnectionError,
    QuiverTimeout,
    RateLimited,
    RetryPolicy,
    Unavailable,
)

from tests.aio import run_async

ANSWER = {"selection_id": "s-1", "tools": []}


def replies(*responses: httpx.Response) -> tuple[httpx.MockTransport, list[str]]:
    """A transport answering ``responses`` in turn (the last one repeated)."""
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return responses[min(len(seen) - 1, len(responses) - 1)]

    return httpx.MockTransport(handle), seen


def throttled(retry_after: str | None = "2") -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after else {}
    body = {"error": "throttled", "detail": "rate limit: 1 per minute"}
    return httpx.Response(429, json={**body, "retryable": True}, headers=headers)


def unavailable(**marks: bool) -> httpx.Response:
    body = {"error": "unavailable", "detail": "database", **marks}
    return httpx.Response(503, json=body)


def test_a_429_is_retried_after_the_servers_retry_after():
    transport, seen = replies(throttled("2"), httpx.Response(200, json=ANSWER))
    sleeps: list[float] = []
    with Quiver("http://q", "k", transport=transport, sleep=sleeps.append) as quiver:
        assert quiver.select("weather") == ANSWER
    assert sleeps == [2.0]
    assert seen == ["/api/v1/select", "/api/v1/select"]


def test_an_http_date_retry_after_is_waited_until():
    later = email.utils.formatdate(time.time() + 5, usegmt=True)
    transport, _ = replies(throttled(later), httpx.Response(200, json=ANSWER))
    sleeps: list[float] = []
    with Quiver("http://q", "k", transport=transport, sleep=sleeps.append) as quiver:
        quiver.select("weather")
    assert len(sleeps) == 1 and 3.0 <= sleeps[0] <= 5.0


def test_a_503_is_retried_with_growing_backoff_then_raised_with_the_envelope():
    transport, seen = replies(unavailable(retryable=True))
    sleeps: list[float] = []
    policy = RetryPolicy(max_retries=3, backoff=0.5, max_backoff=1.5)
    with (
        Quiver(
            "http://q", "k", transport=transport, retry=policy, sleep=sleeps.append
        ) as quiver,
        pytest.raises(Unavailable) as caught,
    ):
        quiver.select("weather")
    assert len(seen) == 4
    assert len(sleeps) == 3
    for wait, base in zip(sleeps, [0.5, 1.0, 1.5], strict=True):
        assert base <= wait <= base * 1.1
    assert caught.value.error == "unavailable"
    assert caught.value.detail == "database"


def test_a_429_past_the_retries_is_rate_limited_with_retry_after():
    transport, seen = replies(throttled("1"))
    sleeps: list[float] = []
    policy = RetryPolicy(max_retries=2)
    with (
        Quiver(
            "http://q", "k", transport=transport, retry=policy, sleep=sleeps.append
        ) as quiver,
        pytest.raises(RateLimited) as caught,
    ):
        quiver.select("weather")
    assert sleeps == [1.0, 1.0]
    assert len(seen) == 3
    assert caught.value.retry_after == 1.0
    assert caught.value.detail == "rate limit: 1 per minute"


def test_a_retry_after_longer_than_max_wait_is_raised_at_once():
    transport, seen = replies(throttled("3600"), httpx.Response(200, json=ANSWER))
    sleeps: list[float] = []
    with (
        Quiver("http://q", "k", transport=transport, sleep=sleeps.append) as quiver,
        pytest.raises(RateLimited),
    ):
        quiver.select("weather")
    assert sleeps == [] and len(seen) == 1


def test_a_400_is_never_retried():
    body = {"error": "invalid", "detail": "query: x", "fields": {"query": ["x"]}}
    transport, seen = replies(httpx.Response(400, json=body))
    sleeps: list[float] = []
    with (
        Quiver("http://q", "k", transport=transport, sleep=sleeps.append) as quiver,
        pytest.raises(BadRequest) as caught,
    ):
        quiver.select("weather")
    assert len(seen) == 1 and sleeps == []
    assert caught.value.fields == {"query": ["x"]}


def test_a_read_timeout_is_a_quiver_timeout_and_is_not_retried():
    calls: list[httpx.Request] = []

    def slow(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    sleeps: list[float] = []
    transport = httpx.MockTransport(slow)
    with (
        Quiver(
            "http://q", "k", transport=transport, sleep=sleeps.append, timeout=0.1
        ) as quiver,
        pytest.raises(QuiverTimeout),
    ):
        quiver.select("weather")
    assert len(calls) == 1 and sleeps == []


def test_a_connection_that_never_opens_is_retried_then_raised():
    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    sleeps: list[float] = []
    policy = RetryPolicy(max_retries=2, backoff=0.1)
    transport = httpx.MockTransport(refused)
    with (
        Quiver(
            "http://q", "k", transport=transport, retry=policy, sleep=sleeps.append
        ) as quiver,
        pytest.raises(QuiverConnectionError),
    ):
        quiver.select("weather")
    assert len(sleeps) == 2


def test_the_timeout_reaches_httpx():
    with Quiver("http://q", "k", timeout=1.5) as quiver:
        assert quiver._http.timeout == httpx.Timeout(1.5)


@pytest.mark.parametrize("marks", [{"retryable": False}, {}])
def test_a_503_the_server_does_not_mark_retryable_is_never_sent_again(marks):
    """A tool call whose outcome could not be recorded ran: sending it again
    would run it again. Only the server's "retryable": true is retried."""
    transport, seen = replies(unavailable(**marks), httpx.Response(200, json=ANSWER))
    sleeps: list[float] = []
    with (
        Quiver("http://q", "k", transport=transport, sleep=sleeps.append) as quiver,
        pytest.raises(Unavailable) as caught,
    ):
        quiver.call("weather.delete_file", {"path": "/a"})
    assert seen == ["/api/v1/tool-calls/execute"] and sleeps == []
    assert caught.value.retryable is False


def test_the_async_client_retries_a_503_then_succeeds():
    transport, seen = replies(
        unavailable(retryable=True), httpx.Response(200, json=ANSWER)
    )
    sleeps: list[float] = []

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    async def run():
        async with AsyncQuiver(
            "http://q", "k", transport=transport, sleep=record
        ) as quiver:
            return await quiver.select("weather")

    assert run_async(run()) == ANSWER
    assert len(seen) == 2 and len(sleeps) == 1 and 0.5 <= sleeps[0] <= 0.55


def test_the_key_is_sent_as_a_bearer_token():
    headers: list[str | None] = []

    def handle(request: httpx.Request) -> httpx.Response:
        headers.append(request.headers.get("Authorization"))
        return httpx.Response(200, json=ANSWER)

    with Quiver("http://q/", "secret", transport=httpx.MockTransport(handle)) as q:
        q.select("weather")
    assert headers == ["Bearer secret"]
