"""The call path's steps reach a webhook: a call that needs approval is
``approval.requested``, a person's decision ``approval.decided``, and the re-sent
call's claim (committed before the upstream is contacted) ``approval.used``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import TestCase

from calls.decisions import approve
from calls.services import execute_call
from notify.models import Delivery
from tests.calls.conftest import link_source
from tests.notify.conftest import webhook_for
from tests.upstream import Upstream, running_upstream

pytestmark = pytest.mark.django_db
CALL = {"name": "weather.delete_file", "arguments": {"path": "/srv/old.log"}}


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with running_upstream() as server:
        yield server


def test_each_step_of_a_call_s_approval_is_a_delivery(
    upstream, receiver, admin_user, agent
):
    link_source(upstream)
    webhook_for(receiver)
    with TestCase.captureOnCommitCallbacks(execute=True):
        pending = execute_call(agent, **CALL)
    assert pending.outcome == "pending" and upstream.calls == []
    with TestCase.captureOnCommitCallbacks(execute=True):
        approve(pending_row(pending.approval_id), person=admin_user)
    with TestCase.captureOnCommitCallbacks(execute=True):
        ran = execute_call(agent, **CALL, approval_id=pending.approval_id)
    assert ran.outcome == "ran"

    rows = Delivery.objects.filter(approval_id=pending.approval_id).order_by("id")
    assert [(r.event, r.payload["approval"]["status"]) for r in rows] == [
        ("approval.requested", "pending"),
        ("approval.decided", "approved"),
        ("approval.used", "used"),
    ]
    assert rows[2].payload["approval"]["decider"] == "root"


def pending_row(approval_id):
    from calls.models import Approval

    return Approval.objects.select_related("catalog").get(pk=approval_id)
