"""Webhooks and the approval email through a real Celery worker: a requested
approval is delivered by the worker's task, retried after the receiver's 500
(the log shows both attempts), and an approval the worker's sweep expires is
sent as decided (expired); its approvers' email is sent by the worker too."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from calls.models import Approval
from identity.services import create_api_client
from notify.models import ApprovalEmail, Delivery
from tests.calls.approval_rows import make_approval, restore_approver_groups
from tests.conftest import start_worker, stop_worker, wait_until
from tests.factories import make_user
from tests.notify.conftest import ask_approval, verify, webhook_for

pytestmark = pytest.mark.integration
FAST = {
    "QUIVER_WEBHOOK_BACKOFF_S": "1",
    "QUIVER_WEBHOOK_SWEEP_S": "1",
    "QUIVER_APPROVAL_EXPIRY_INTERVAL_S": "1",
}


@pytest.fixture
def fast_worker(transactional_db, purged_broker):
    process = start_worker("notify", FAST)
    try:
        yield process
    finally:
        stop_worker(process)


def test_the_worker_delivers_retries_expires_and_emails(fast_worker, receiver):
    restore_approver_groups()
    make_user("ann", groups=("approver",))
    admin = make_user("root", superuser=True)
    agent = create_api_client("files-bot", "agent", catalogs="*")[0].user
    receiver.answer((500, "try later"), 200)
    hook, secret = webhook_for(receiver, actor=admin)

    approval = ask_approval(agent, arguments={"path": "/srv/q3.pdf"})

    first, second = receiver.wait_for(2)
    assert json.loads(first.body)["approval"]["id"] == str(approval.pk)
    assert first.body == second.body and verify(
        secret, second.headers["Quiver-Signature"], second.body
    )
    row = wait_until(
        lambda: Delivery.objects.filter(
            approval_id=approval.pk, status="delivered"
        ).first(),
        what="the delivery to be logged delivered",
    )
    assert (row.attempts, row.last_status_code, row.last_error) == (2, 200, "")
    email = wait_until(
        lambda: ApprovalEmail.objects.filter(
            approval_id=approval.pk, status="sent"
        ).first(),
        what="the approval email",
    )
    assert email.recipients == 2  # ann and root; never the agent

    lapsed = make_approval(
        agent, tool_name="files.rm", expires_in=timedelta(seconds=-1)
    )
    third = receiver.wait_for(3)[2]
    body = json.loads(third.body)
    assert body["type"] == "approval.decided"
    assert body["approval"]["id"] == str(lapsed.pk)
    assert body["approval"]["status"] == "expired"
    assert Approval.objects.get(pk=lapsed.pk).status == "expired"
