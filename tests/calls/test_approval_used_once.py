"""One approval, two calls at the same moment: the approval's row is locked and
spent in the transaction that records the call, so exactly one runs."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from calls.models import Approval
from calls.services import execute_call
from identity.models import ApiClient
from tests.calls.conftest import link_source
from tests.factories import make_client_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_simultaneous_calls_with_one_approval_run_once(upstream):
    link_source(upstream)
    make_client_key("agent-race", "agent", allow_unsafe=True)
    user = ApiClient.objects.get(name="agent-race").user
    call = {"name": "weather.delete_file", "arguments": {"path": "/race"}}
    pending = execute_call(user, **call)
    Approval.objects.filter(pk=pending.approval_id).update(
        status="approved", decided=timezone.now()
    )
    start = threading.Barrier(2)
    outcomes: list[Any] = []

    def run() -> None:
        try:
            start.wait()
            answer = execute_call(user, **call, approval_id=pending.approval_id)
            outcomes.append((answer.outcome, answer.reason))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcome for outcome, _ in outcomes) == ["ran", "refused"]
    assert any("already used" in reason for _, reason in outcomes)
    assert len(upstream.calls_to("delete_file")) == 1
    assert Approval.objects.get(pk=pending.approval_id).status == "used"
