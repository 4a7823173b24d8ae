"""Each step of an approval is announced to the lifecycle's listeners once, after
it commits, as the step left it: requested, approved, denied, expired (by the
sweep, or by a decision that came too late) and used; a step that rolls back is
announced to nobody, and a listener that fails never undoes a step."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import TestCase
from django.utils import timezone

from calls import lifecycle
from calls.approvals import record_use, use_approval
from calls.decisions import approve, deny, expire_due
from calls.models import Approval
from config.exceptions import Conflict
from tests.calls.approval_rows import make_approval
from tests.notify.conftest import ask_approval

pytestmark = pytest.mark.django_db


@pytest.fixture
def heard() -> Iterator[list[lifecycle.ApprovalEvent]]:
    got: list[lifecycle.ApprovalEvent] = []
    lifecycle.listen(got.append)
    try:
        yield got
    finally:
        lifecycle._listeners.remove(got.append)


@pytest.fixture
def agent(db):
    from identity.services import create_api_client

    return create_api_client("lifecycle-bot", "agent", catalogs="*")[0].user


def test_a_request_is_announced_after_it_commits(heard, agent):
    approval = ask_approval(agent)
    [event] = heard
    assert (event.type, event.status) == ("approval.requested", "pending")
    assert event.approval_id == approval.pk and event.catalog == "default"
    assert event.requester == agent.get_username()
    assert event.expires == approval.expires


def test_a_decision_is_announced_with_who_decided_and_why(heard, agent, admin_user):
    yes, no = make_approval(agent), make_approval(agent, tool_name="drop_table")
    with TestCase.captureOnCommitCallbacks(execute=True):
        approve(yes, person=admin_user)
    with TestCase.captureOnCommitCallbacks(execute=True):
        deny(no, person=admin_user, reason="not in prod")
    assert [(e.type, e.status, e.decider, e.reason) for e in heard] == [
        ("approval.decided", "approved", "root", ""),
        ("approval.decided", "denied", "root", "not in prod"),
    ]


def test_an_expiry_is_a_decision_by_nobody(heard, agent, admin_user):
    lapsed = make_approval(agent, expires_in=timedelta(seconds=-1))
    late = make_approval(
        agent, tool_name="drop_table", expires_in=timedelta(seconds=-1)
    )
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert expire_due() == 2
    assert {(e.approval_id, e.status, e.decider) for e in heard} == {
        (lapsed.pk, "expired", ""),
        (late.pk, "expired", ""),
    }
    heard.clear()
    too_late = make_approval(agent, tool_name="rm", expires_in=timedelta(seconds=-1))
    with TestCase.captureOnCommitCallbacks(execute=True), pytest.raises(Conflict):
        approve(too_late, person=admin_user)
    assert [(e.type, e.status) for e in heard] == [("approval.decided", "expired")]


def test_a_use_is_announced(heard, agent, admin_user):
    approval = ask_approval(agent)
    with TestCase.captureOnCommitCallbacks(execute=True):
        approve(approval, person=admin_user)
    heard.clear()
    approval.refresh_from_db()
    # As the call path's claim does: the use and its event, one transaction.
    with TestCase.captureOnCommitCallbacks(execute=True), transaction.atomic():
        used = use_approval(
            approval.pk,
            tool=approval.tool,
            arguments=approval.arguments,
            caller=agent,
        )
        assert heard == []
        record_use(used, caller=agent, request_id=None, call_id=1)
    [event] = heard
    assert (event.type, event.status) == ("approval.used", "used")
    assert event.used is not None and event.decider == "root"


def test_a_step_that_rolls_back_is_announced_to_nobody(heard, agent, admin_user):
    approval = make_approval(agent)
    with (
        TestCase.captureOnCommitCallbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        approve(approval, person=admin_user)
        raise RuntimeError("after the decision")
    assert heard == []
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_a_failing_listener_never_undoes_the_step(heard, agent, admin_user, caplog):
    def broken(event: lifecycle.ApprovalEvent) -> None:
        raise RuntimeError("the listener is broken")

    lifecycle.listen(broken)
    try:
        approval = make_approval(agent)
        with TestCase.captureOnCommitCallbacks(execute=True):
            approve(approval, person=admin_user)
    finally:
        lifecycle._listeners.remove(broken)
    assert Approval.objects.get(pk=approval.pk).status == "approved"
    assert [e.status for e in heard] == ["approved"]
    assert "the listener is broken" in caplog.text


def test_the_snapshot_keeps_the_step_s_state_after_the_row_moves_on(
    heard, agent, admin_user
):
    approval = ask_approval(agent)
    Approval.objects.filter(pk=approval.pk).update(
        status="approved", decided=timezone.now(), decider_name="someone"
    )
    assert heard[0].status == "pending" and heard[0].decider == ""
