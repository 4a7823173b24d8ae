"""Never a call without its audit row: when the row cannot be written after the
upstream ran (the database failed during the call), the answer is a 503 saying
so, the result is withheld, and the log names the call by its arguments' hash."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone

import calls.services
from audit.models import AuditEvent
from calls.hashing import arguments_hash
from calls.models import Approval

URL = "/api/v1/tool-calls/execute"


@pytest.fixture
def agent(with_key: Any) -> Any:
    return with_key("agent", "agent-down", allow_unsafe=True)


@pytest.fixture
def audit_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The database goes away while the upstream runs: the row's INSERT fails."""

    def record_event(event_type: str, **fields: Any) -> Any:
        if event_type == "tool_call" and fields["output"]["outcome"] != "pending":
            raise OperationalError("server closed the connection unexpectedly")
        return AuditEvent.objects.none()

    monkeypatch.setattr(calls.services, "record_event", record_event)


def test_a_call_whose_row_cannot_be_written_is_a_503_and_logged(
    agent, linked, upstream, audit_fails, caplog
):
    arguments = {"city": "Secretville"}
    with caplog.at_level(logging.WARNING, logger="calls.services"):
        response = agent.post(
            URL, {"name": "weather.get_forecast", "arguments": arguments}, format="json"
        )
    assert response.status_code == 503
    body = response.json()
    assert body["service"] == "audit"
    assert "ran upstream but could not be recorded" in body["detail"]
    assert "Secretville" not in response.content.decode()  # the result is withheld
    assert len(upstream.calls) == 1
    [line] = [
        r.getMessage() for r in caplog.records if "NOT RECORDED" in r.getMessage()
    ]
    assert arguments_hash(arguments) in line
    assert "Secretville" not in line


def test_an_approved_call_whose_row_fails_keeps_its_approval_unspent(
    agent, linked, upstream, monkeypatch
):
    body = {"name": "weather.delete_file", "arguments": {"path": "/a"}}
    approval_id = agent.post(URL, body, format="json").json()["approval_id"]
    Approval.objects.filter(pk=approval_id).update(
        status="approved", decided=timezone.now()
    )
    real = calls.services.record_event

    def record_event(event_type: str, **fields: Any) -> Any:
        if fields["output"]["outcome"] == "ran":
            raise OperationalError("server closed the connection unexpectedly")
        return real(event_type, **fields)

    monkeypatch.setattr(calls.services, "record_event", record_event)
    response = agent.post(URL, {**body, "approval_id": approval_id}, format="json")
    assert response.status_code == 503
    # The use rolls back with the row (README: the operator checks before reuse).
    assert Approval.objects.get(pk=approval_id).status == "approved"
    assert len(upstream.calls_to("delete_file")) == 1
