"""Pending approvals past their expiry become ``expired``: the periodic task
(calls.tasks) is idempotent and writes one event per expiry."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from audit.choices import EventType
from audit.models import AuditEvent
from calls.decisions import expire_due
from calls.models import Approval, ApprovalStatus
from calls.tasks import ExpiryThread, expire_approvals
from tests.calls.approval_rows import make_approval
from tests.factories import make_user

PAST = timedelta(seconds=-5)


def expiry_events() -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(
            event_type=EventType.APPROVAL, output__status="expired"
        )
    )


@pytest.mark.django_db
def test_only_pending_approvals_past_their_expiry_expire():
    agent = make_user("api:bot")
    due = make_approval(agent, expires_in=PAST)
    waiting = make_approval(agent)
    approved_late = make_approval(
        agent, expires_in=PAST, status=ApprovalStatus.APPROVED
    )

    assert expire_due() == 1

    statuses = dict(Approval.objects.values_list("pk", "status"))
    assert statuses[due.pk] == "expired"
    assert statuses[waiting.pk] == "pending"
    # An approved one past its expiry is refused by use_approval, not rewritten.
    assert statuses[approved_late.pk] == "approved"
    [event] = expiry_events()
    assert event.input["approval_id"] == str(due.pk)
    assert event.actor_name == "system"


@pytest.mark.django_db
def test_the_task_is_idempotent():
    agent = make_user("api:bot")
    for _ in range(3):
        make_approval(agent, expires_in=PAST)

    assert expire_approvals() == 3
    assert expire_approvals() == 0

    assert len(expiry_events()) == 3
    assert not Approval.objects.filter(status=ApprovalStatus.PENDING).exists()


@pytest.mark.django_db
def test_more_than_one_batch_expires_in_one_run(monkeypatch):
    from calls import decisions

    monkeypatch.setattr(decisions, "EXPIRY_BATCH", 2)
    agent = make_user("api:bot")
    for _ in range(5):
        make_approval(agent, expires_in=PAST)

    assert expire_due() == 5
    assert len(expiry_events()) == 5


@pytest.mark.django_db(transaction=True)
def test_the_workers_thread_expires_approvals_on_its_interval():
    agent = make_user("api:bot")
    due = make_approval(agent, expires_in=PAST)
    thread = ExpiryThread(0.2)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if Approval.objects.get(pk=due.pk).status == ApprovalStatus.EXPIRED:
                break
            time.sleep(0.1)
    finally:
        thread.stop()

    assert Approval.objects.get(pk=due.pk).status == ApprovalStatus.EXPIRED
    assert len(expiry_events()) == 1
