"""One approval, one execution, always on record (issue 30, points 1 and 5): while
an approved call is still running upstream, its approval is already ``used``
(with its ``approval`` event), its ``started`` row is committed and it is in
flight, so another request with the same approval is refused at once; the
outcome then names the call. A call left in flight by a stopped process is
recorded ``interrupted`` by the sweep, once."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

import calls.records
from audit.models import AuditEvent
from calls.attempts import sweep_interrupted
from calls.models import Approval
from calls.services import execute_call
from calls.tasks import InterruptedCallTimer, sweep_interrupted_calls
from catalog.models import Tool
from config.celery import app
from identity.models import ApiClient
from tests.calls.conftest import link_source
from tests.conftest import wait_until
from tests.factories import make_client_key

pytestmark = pytest.mark.django_db(transaction=True)
SLOW: dict[str, Any] = {
    "name": "weather.slow_echo",
    "arguments": {"text": "bye", "seconds": 3},
}


@pytest.fixture
def agent(upstream: Any) -> Any:
    """A key whose slow_echo needs a person's approval, and that approval."""
    tools = link_source(upstream)
    Tool.objects.filter(pk=tools["slow_echo"].pk).update(requires_approval=True)
    make_client_key("agent-claim", "agent", allow_unsafe=True)
    return ApiClient.objects.get(name="agent-claim").user


def approved(user: Any) -> str:
    pending = execute_call(user, **SLOW)
    assert pending.outcome == "pending"
    Approval.objects.filter(pk=str(pending.approval_id)).update(
        status="approved", decided=timezone.now()
    )
    return str(pending.approval_id)


def in_background(work: Any) -> tuple[threading.Thread, list[Any]]:
    done: list[Any] = []

    def run() -> None:
        try:
            done.append(work())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


def rows(kind: str = "tool_call") -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type=kind).order_by("pk"))


def test_the_approval_is_used_and_the_start_recorded_before_the_upstream_answers(
    agent, upstream
):
    approval_id = approved(agent)
    thread, done = in_background(
        lambda: execute_call(agent, **SLOW, approval_id=approval_id)
    )
    wait_until(lambda: upstream.calls_to("slow_echo"), what="the call upstream")

    # Seen from another connection while the upstream is still working:
    assert thread.is_alive()
    assert Approval.objects.get(pk=approval_id).status == "used"
    start = rows()[-1]
    assert start.output["outcome"] == "started"
    assert start.input["approval_id"] == approval_id
    used = rows("approval")[-1]
    assert (used.output["status"], used.output["call_id"]) == ("used", start.pk)
    assert AuditEvent.objects.calls_without_outcome().filter(pk=start.pk).exists()

    again = execute_call(agent, **SLOW, approval_id=approval_id)
    assert thread.is_alive()  # refused at once, not after waiting for the first
    assert again.outcome == "refused"
    assert "already used" in again.reason

    thread.join(30)
    [answer] = done
    assert answer.outcome == "ran"
    assert answer.call_id == str(start.pk)
    assert len(upstream.calls_to("slow_echo")) == 1
    outcome = [e for e in rows() if e.input.get("call_id") == start.pk]
    assert [e.output["outcome"] for e in outcome] == ["ran"]
    assert not AuditEvent.objects.calls_without_outcome().exists()


def test_a_call_without_approval_is_on_record_before_the_upstream_answers(
    agent, upstream
):
    quick = {"name": "weather.get_forecast", "arguments": {"city": "Oslo"}}
    assert execute_call(agent, **quick).outcome == "ran"  # the pool is warm
    slow = {"name": "weather.slow_echo", "arguments": {"text": "hi", "seconds": 3}}
    Tool.objects.filter(name="weather.slow_echo").update(requires_approval=False)
    thread, _done = in_background(lambda: execute_call(agent, **slow))
    wait_until(lambda: upstream.calls_to("slow_echo"), what="the call upstream")
    assert thread.is_alive()
    assert rows()[-1].output["outcome"] == "started"
    thread.join(30)


def test_a_call_left_without_outcome_is_recorded_interrupted_after_its_deadline(
    agent, upstream, monkeypatch
):
    approval_id = approved(agent)
    real = calls.records.record_event

    def dying(event_type: str, **fields: Any) -> Any:
        """The process stops after the upstream answered: no outcome row."""
        if fields["output"]["outcome"] == "ran":
            raise SystemExit("killed")
        return real(event_type, **fields)

    monkeypatch.setattr(calls.records, "record_event", dying)
    with pytest.raises(SystemExit):
        execute_call(agent, **SLOW, approval_id=approval_id)
    start = rows()[-1]
    assert start.output["outcome"] == "started"
    assert sweep_interrupted() == 0  # its call could still be running
    later = timezone.now() + timedelta(minutes=5)

    assert sweep_interrupted(later) == 1
    assert sweep_interrupted(later + timedelta(minutes=1)) == 0  # judged once
    interrupted = rows()[-1]
    assert interrupted.output["outcome"] == "interrupted"
    assert interrupted.output["is_error"] is True
    assert interrupted.input["call_id"] == start.pk
    assert interrupted.input["approval_id"] == approval_id
    assert interrupted.actor_name == start.actor_name
    assert "the upstream may have run it" in interrupted.output["reason"]
    assert not AuditEvent.objects.calls_without_outcome().exists()
    assert Approval.objects.get(pk=approval_id).status == "used"


def test_a_sweep_leaves_calls_with_an_outcome_alone(agent, upstream):
    quick = {"name": "weather.get_forecast", "arguments": {"city": "Oslo"}}
    assert execute_call(agent, **quick).outcome == "ran"
    assert sweep_interrupted(timezone.now() + timedelta(minutes=5)) == 0
    assert [e.output["outcome"] for e in rows()] == ["started", "ran"]


def test_every_worker_sweeps_interrupted_calls_on_an_interval():
    assert InterruptedCallTimer in app.steps["worker"]
    assert InterruptedCallTimer.task == sweep_interrupted_calls.name
    assert sweep_interrupted_calls() == 0
