"""The gateway's own HTTP answers say whether they may be sent again, as the
API's do (config.retries): a refusal whose row could not be written and the
database lost at the key's check did nothing (retryable, with Retry-After); an
answer that came too late may still be running its work (never retryable)."""

from __future__ import annotations

import json
from typing import Any

from gateway import wsgi


def answered(emit: Any) -> tuple[str, dict[str, str], dict[str, Any]]:
    seen: dict[str, Any] = {}

    def start(line: str, headers: list[tuple[str, str]]) -> None:
        seen.update(line=line, headers=dict(headers))

    body = json.loads(b"".join(emit(start)))
    return seen["line"], seen["headers"], body


def test_a_refusal_that_could_not_be_recorded_may_be_sent_again():
    line, headers, body = answered(wsgi._not_recorded)
    assert line.startswith("503 ")
    assert (body["service"], body["retryable"]) == ("audit", True)
    assert headers["Retry-After"] == "5"


def test_an_answer_past_its_time_is_never_sent_again_blindly():
    line, headers, body = answered(
        lambda start: wsgi._json(start, 504, "timeout", "mcp: no answer within 50 s")
    )
    assert line.startswith("504 ")
    assert body["retryable"] is False
    assert "Retry-After" not in headers


def test_a_refusal_of_the_callers_own_carries_no_retry_mark():
    line, headers, body = answered(
        lambda start: wsgi._json(
            start, 401, "unauthorized", "no key", challenge='Bearer realm="quiver"'
        )
    )
    assert line.startswith("401 ")
    assert "retryable" not in body and "Retry-After" not in headers
