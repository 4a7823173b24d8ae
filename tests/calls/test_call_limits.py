"""Slow upstreams cannot starve the service (issue 30, point 3): calls in flight
are limited per key (429), per source and per web process (503), each refusal a
JSON answer naming the limit, with a ``refused`` row, nothing called and no
approval spent; Redis down is a 503 naming redis (the limits cannot be counted,
so no call starts); a slot left by a dead process lapses by itself."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import AuditEvent
from calls import limits
from calls.models import Approval
from identity.models import ApiClient
from sources.models import Source
from tests.calls.conftest import link_source
from tests.conftest import wait_until
from tests.factories import make_client_key
from tests.upstream import free_port

URL = "/api/v1/tool-calls/execute"
FORECAST = {"name": "weather.get_forecast", "arguments": {"city": "Oslo"}}


def user_of(name: str) -> Any:
    return ApiClient.objects.get(name=name).user


def source_id() -> int:
    return Source.objects.get(name="weather").pk


def last_row() -> AuditEvent:
    return AuditEvent.objects.filter(event_type="tool_call").order_by("-pk")[0]


@pytest.fixture
def agent(with_key: Any, linked: Any) -> Any:
    return with_key("agent", "agent-limits", allow_unsafe=True)


@pytest.mark.django_db(transaction=True)
def test_a_key_over_its_calls_in_flight_gets_a_429_while_its_slow_call_runs(
    with_key, upstream, settings
):
    settings.QUIVER_CALLS_PER_KEY = 1
    link_source(upstream)
    agent = with_key("agent", "agent-busy")
    slow = {"name": "weather.slow_echo", "arguments": {"text": "hi", "seconds": 3}}
    answers: list[Any] = []

    def run() -> None:
        try:
            answers.append(agent.post(URL, slow, format="json"))
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: upstream.calls_to("slow_echo"), what="the slow call upstream")
    second = APIClient()
    second.credentials(**agent._credentials)
    refused = second.post(URL, FORECAST, format="json")
    thread.join(30)
    assert refused.status_code == 429
    body = refused.json()
    assert body["error"] == "throttled" and body["limit"] == "calls_per_key"
    assert body["detail"].startswith("calls_per_key: 1 upstream calls of this key")
    assert body["retryable"] is True  # nothing ran: send it again after the wait
    assert refused["Retry-After"] == "5"
    assert upstream.calls_to("get_forecast") == []
    assert answers[0].json()["outcome"] == "ran"
    # The slot came back with the slow call's end.
    assert second.post(URL, FORECAST, format="json").json()["outcome"] == "ran"


def test_a_source_full_of_calls_is_a_503_naming_the_limit(agent, upstream, settings):
    settings.QUIVER_CALLS_PER_SOURCE = 1
    make_client_key("someone-else", "agent")
    with limits.hold(user_of("someone-else"), source_id(), 30):
        response = agent.post(URL, FORECAST, format="json")
    assert response.status_code == 503
    body = response.json()
    assert (body["error"], body["service"]) == ("unavailable", "calls_per_source")
    assert "QUIVER_CALLS_PER_SOURCE" in body["detail"]
    assert body["retryable"] is True and response["Retry-After"] == "5"
    assert upstream.calls == []
    row = last_row()
    assert (row.output["outcome"], row.output["reason"]) == ("refused", body["detail"])


def test_a_web_process_keeps_threads_for_other_work(agent, upstream, settings):
    settings.QUIVER_CALLS_PER_PROCESS = 1
    make_client_key("someone-else", "agent")
    with limits.hold(user_of("someone-else"), source_id() + 1000, 30):
        response = agent.post(URL, FORECAST, format="json")
    assert response.status_code == 503
    assert response.json()["service"] == "calls_per_process"
    assert response.json()["retryable"] is True and response["Retry-After"] == "5"
    assert upstream.calls == []


def test_a_refusal_for_a_limit_spends_no_approval(agent, upstream, settings):
    body = {"name": "weather.delete_file", "arguments": {"path": "/a"}}
    approval_id = agent.post(URL, body, format="json").json()["approval_id"]
    Approval.objects.filter(pk=approval_id).update(
        status="approved", decided=timezone.now()
    )
    settings.QUIVER_CALLS_PER_KEY = 1
    with limits.hold(user_of("agent-limits"), source_id(), 30):
        refused = agent.post(URL, {**body, "approval_id": approval_id}, format="json")
    assert refused.status_code == 429
    assert Approval.objects.get(pk=approval_id).status == "approved"
    ran = agent.post(URL, {**body, "approval_id": approval_id}, format="json")
    assert ran.json()["outcome"] == "ran"
    assert len(upstream.calls_to("delete_file")) == 1


def test_redis_down_is_a_503_naming_redis_and_nothing_is_called(
    agent, upstream, settings
):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = agent.post(URL, FORECAST, format="json")
    assert response.status_code == 503
    body = response.json()
    assert body["service"] == "redis"
    assert body["detail"].startswith("redis: unavailable")
    assert body["retryable"] is True and response["Retry-After"] == "5"
    assert upstream.calls == []
    assert last_row().output["outcome"] == "refused"
    assert limits._gate.in_flight == 0  # the process's slot was given back


def test_a_slot_left_by_a_dead_process_lapses_by_itself(
    agent, upstream, settings, monkeypatch
):
    settings.QUIVER_CALLS_PER_KEY = 1
    monkeypatch.setattr(limits, "SLOT_MARGIN_S", 0)
    limits.hold(user_of("agent-limits"), source_id(), 0.5)  # never given back
    limits._gate.leave()  # (the dead process's own count died with it)
    assert agent.post(URL, FORECAST, format="json").status_code == 429
    wait_until(
        lambda: agent.post(URL, FORECAST, format="json").status_code == 200,
        timeout=10,
        what="the lapsed slot",
    )


def test_mcp_answers_a_limit_as_an_error_result_naming_it(agent, upstream, settings):
    from calls.services import execute_call
    from gateway.server import _call_result

    settings.QUIVER_CALLS_PER_KEY = 1
    user = user_of("agent-limits")
    with limits.hold(user, source_id(), 30):
        answer = execute_call(user, **FORECAST, channel="mcp")
    result = _call_result(answer)
    assert result.is_error is True
    assert result.structured_content["status"] == "refused"
    assert result.structured_content["reason"].startswith("calls_per_key: ")
    assert upstream.calls == []


def test_limits_still_hold_after_redis_forgets_its_scripts(agent, upstream, settings):
    # The slots' script is sent by its SHA; a restarted Redis knows no scripts.
    settings.QUIVER_CALLS_PER_KEY = 1
    assert agent.post(URL, FORECAST, format="json").json()["outcome"] == "ran"
    limits._redis().script_flush()
    with limits.hold(user_of("agent-limits"), source_id(), 30) as held:
        refused = agent.post(URL, FORECAST, format="json")
        assert refused.status_code == 429
        assert limits._redis().zcard(held.keys[0]) == 1
    assert limits._redis().zcard(held.keys[0]) == 0  # given back
    assert agent.post(URL, FORECAST, format="json").json()["outcome"] == "ran"
    assert len(upstream.calls_to("get_forecast")) == 2
