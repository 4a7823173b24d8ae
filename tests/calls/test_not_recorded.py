"""Never a call without its audit row. The start is committed before the upstream
is contacted; when the outcome cannot be written after the upstream ran (the
database failed during the call), the answer is a 503 saying so, the result is
withheld, the log names the call by its arguments' hash, and the call stays in
flight for the sweep to record ``interrupted``. When the database fails before
the claim, nothing is called."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone

import calls.records
from audit.models import AuditEvent
from calls.hashing import arguments_hash
from calls.models import Approval

URL = "/api/v1/tool-calls/execute"
DELETE = {"name": "weather.delete_file", "arguments": {"path": "/a"}}


@pytest.fixture
def agent(with_key: Any) -> Any:
    return with_key("agent", "agent-down", allow_unsafe=True)


def fail_rows(monkeypatch: pytest.MonkeyPatch, *outcomes: str) -> None:
    """The database goes away when a row of one of ``outcomes`` is written."""
    real = calls.records.record_event

    def record_event(event_type: str, **fields: Any) -> Any:
        if fields["output"]["outcome"] in outcomes:
            raise OperationalError("server closed the connection unexpectedly")
        return real(event_type, **fields)

    monkeypatch.setattr(calls.records, "record_event", record_event)


def approved(agent: Any) -> str:
    approval_id = agent.post(URL, DELETE, format="json").json()["approval_id"]
    Approval.objects.filter(pk=approval_id).update(
        status="approved", decided=timezone.now()
    )
    return str(approval_id)


def test_a_call_whose_outcome_cannot_be_written_is_a_503_and_logged(
    agent, linked, upstream, monkeypatch, caplog
):
    fail_rows(monkeypatch, "ran")
    arguments = {"city": "Secretville"}
    with caplog.at_level(logging.WARNING, logger="calls.services"):
        response = agent.post(
            URL, {"name": "weather.get_forecast", "arguments": arguments}, format="json"
        )
    assert response.status_code == 503
    body = response.json()
    assert body["service"] == "audit"
    assert "ran upstream but its outcome could not be recorded" in body["detail"]
    # It ran: the answer says never to send it again, and sets no wait.
    assert body["retryable"] is False and "Retry-After" not in response
    assert "Secretville" not in response.content.decode()  # the result is withheld
    assert len(upstream.calls) == 1
    [line] = [
        r.getMessage() for r in caplog.records if "NOT RECORDED" in r.getMessage()
    ]
    assert arguments_hash(arguments) in line
    assert "Secretville" not in line
    [start] = AuditEvent.objects.filter(event_type="tool_call")
    assert start.output["outcome"] == "started"
    assert f"call_id {start.pk}" in body["detail"]
    # Still in flight: the sweep will say it was interrupted.
    assert AuditEvent.objects.calls_without_outcome().filter(pk=start.pk).exists()


def test_an_approved_call_whose_outcome_fails_has_spent_its_approval(
    agent, linked, upstream, monkeypatch
):
    approval_id = approved(agent)
    fail_rows(monkeypatch, "ran")
    response = agent.post(URL, {**DELETE, "approval_id": approval_id}, format="json")
    assert response.status_code == 503
    assert Approval.objects.get(pk=approval_id).status == "used"
    steps = AuditEvent.objects.filter(
        event_type__in=["tool_call", "approval"]
    ).order_by("pk")
    assert [
        (e.event_type, e.output.get("outcome") or e.output["status"]) for e in steps
    ] == [
        ("approval", "requested"),
        ("tool_call", "pending"),
        ("tool_call", "started"),
        ("approval", "used"),
    ]
    again = agent.post(URL, {**DELETE, "approval_id": approval_id}, format="json")
    assert again.status_code == 409
    assert "already used" in again.json()["detail"]
    assert len(upstream.calls_to("delete_file")) == 1


def test_a_database_lost_before_the_claim_calls_nothing_and_spends_nothing(
    agent, linked, upstream, monkeypatch
):
    approval_id = approved(agent)
    fail_rows(monkeypatch, "started")
    response = agent.post(URL, {**DELETE, "approval_id": approval_id}, format="json")
    assert response.status_code == 503
    assert response.json()["service"] == "database"
    assert response.json()["retryable"] is True  # nothing ran
    assert upstream.calls == []
    assert Approval.objects.get(pk=approval_id).status == "approved"
    assert not AuditEvent.objects.filter(output__outcome="started").exists()
    assert not AuditEvent.objects.calls_without_outcome().exists()
