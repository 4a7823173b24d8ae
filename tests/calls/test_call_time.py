"""A call never outlives its request (issue 30, point 1): a source cannot be saved
with a timeout the web server would cut short, a row stored before that rule is
cut to the bound at call time, and a fault inside Quiver after the call started
is a JSON 500 with the call's outcome on record."""

from __future__ import annotations

from typing import Any

import pytest

import calls.services
from audit.models import AuditEvent
from sources.models import Source
from tests.calls.conftest import link_source

SOURCES = "/api/v1/catalogs/default/sources"
EXECUTE = "/api/v1/tool-calls/execute"


@pytest.fixture
def admin(as_user: Any, admin_user: Any) -> Any:
    return as_user(admin_user)


@pytest.mark.parametrize("timeout", [45.5, 60, 300])
def test_a_source_timeout_over_the_call_bound_is_refused_naming_the_field(
    admin, upstream, timeout
):
    body = {"name": "slow", "url": upstream.url, "timeout_seconds": timeout}
    refused = admin.post(SOURCES, body, format="json")
    assert refused.status_code == 400
    [rule] = refused.json()["fields"]["timeout_seconds"]
    assert rule.startswith("timeout_seconds: between 1 and 45 seconds")
    assert "60 s" in rule
    assert not Source.objects.filter(name="slow").exists()


def test_a_source_timeout_within_the_bound_is_saved_and_cannot_be_raised_past_it(
    admin, upstream
):
    body = {"name": "slow", "url": upstream.url, "timeout_seconds": 45}
    created = admin.post(SOURCES, body, format="json")
    assert created.status_code == 201, created.json()
    one = f"/api/v1/sources/{created.json()['id']}"
    raised = admin.patch(one, {"timeout_seconds": 120}, format="json")
    assert raised.status_code == 400
    assert "timeout_seconds" in raised.json()["fields"]
    assert Source.objects.get(name="slow").timeout_seconds == 45


def test_the_console_form_refuses_a_timeout_over_the_bound(
    client, admin_user, upstream
):
    client.force_login(admin_user)
    page = client.post(
        "/catalogs/default/sources/",
        {"name": "slow", "url": upstream.url, "timeout_seconds": "90"},
    )
    assert page.status_code in (200, 400)
    assert "between 1 and 45 seconds" in page.content.decode()
    assert not Source.objects.filter(name="slow").exists()


def test_a_stored_timeout_over_the_bound_is_cut_at_call_time(
    with_key, upstream, settings
):
    link_source(upstream, name="old")
    Source.objects.filter(name="old").update(timeout_seconds=300)  # saved before
    settings.QUIVER_CALL_TIMEOUT_MAX_SECONDS = 1
    agent = with_key("agent", "agent-old")
    slow = {"name": "old.slow_echo", "arguments": {"text": "hi", "seconds": 3}}
    answer = agent.post(EXECUTE, slow, format="json").json()
    assert answer["outcome"] == "timed_out"
    assert answer["reason"] == "source 'old': no answer within 1 s"
    start = AuditEvent.objects.filter(output__outcome="started").get()
    assert start.output["timeout_s"] == 1.0


def test_a_fault_inside_quiver_after_the_start_is_a_json_500_on_record(
    with_key, linked, upstream, monkeypatch
):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in Quiver")

    monkeypatch.setattr(calls.services, "call_upstream", broken)
    agent = with_key("agent", "agent-fault")
    agent.raise_request_exception = False
    call = {"name": "weather.get_forecast", "arguments": {"city": "Oslo"}}
    response = agent.post(EXECUTE, call, format="json")
    assert response.status_code == 500
    assert response.json()["error"] == "server_error"
    assert response.json()["retryable"] is False  # the upstream may have run
    start, ended = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    assert start.output["outcome"] == "started"
    assert ended.output["outcome"] == "failed"
    assert ended.output["reason"].startswith("quiver: an unexpected error")
    assert ended.input["call_id"] == start.pk
    assert not AuditEvent.objects.calls_without_outcome().exists()
