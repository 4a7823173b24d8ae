"""A webhook delivery against a real HTTP receiver, one attempt at a time as a
worker makes them: signed as documented, retried after a failure with a
growing wait, logged without secrets, replayed; sent only for the webhook's own
catalog, never for a step that rolled back."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import TestCase
from django.utils import timezone

from calls.decisions import approve, deny
from calls.models import Approval
from catalog.models import Catalog
from notify import delivery
from notify.models import Delivery
from notify.services import replay_delivery, rotate_secret
from sources import netguard
from telemetry.metrics import REGISTRY
from tests.factories import make_tool, make_user
from tests.notify.conftest import (
    CARD,
    CARD_PART,
    ask_approval,
    verify,
    webhook_for,
)

pytestmark = pytest.mark.django_db


def attempts_of(approval: Approval) -> list[Delivery]:
    return list(Delivery.objects.filter(approval_id=approval.pk).order_by("id"))


def due_now(row: Delivery) -> None:
    Delivery.objects.filter(pk=row.pk).update(next_attempt=timezone.now())


def counted(outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "quiver_webhook_deliveries_total", {"outcome": outcome}
    )
    return value or 0.0


def test_a_requested_approval_is_posted_signed_with_the_documented_body(
    receiver, admin_user, agent, settings
):
    settings.QUIVER_PUBLIC_URL = "https://quiver.example.com/"
    _hook, secret = webhook_for(receiver)
    approval = ask_approval(agent, arguments={"path": "/srv/q3.pdf", "force": True})
    [row] = attempts_of(approval)

    assert delivery.attempt(row.pk) is None

    [got] = receiver.wait_for(1)
    assert got.path == "/hooks/quiver"
    assert verify(secret, got.headers["Quiver-Signature"], got.body)
    assert not verify(secret, got.headers["Quiver-Signature"], got.body + b" ")
    assert got.headers["Quiver-Event"] == "approval.requested"
    assert got.headers["Content-Type"] == "application/json"
    body = json.loads(got.body)
    assert got.headers["Quiver-Event-Id"] == body["id"]
    assert body["type"] == "approval.requested" and body["catalog"] == "default"
    sent = body["approval"]
    assert sent["id"] == str(approval.pk) and sent["status"] == "pending"
    assert sent["tool"] == "files.delete_file" and sent["tool_version"] == 1
    assert sent["arguments"] == {"path": "/srv/q3.pdf", "force": True}
    assert sent["arguments_hash"] == approval.arguments_hash
    assert sent["agent"] == agent.get_username()
    assert sent["expires"] == approval.expires.isoformat()
    assert (
        sent["url"] == f"https://quiver.example.com/approvals/#approval-{approval.pk}"
    )
    row.refresh_from_db()
    assert (row.status, row.attempts, row.last_status_code) == ("delivered", 1, 200)


def test_only_the_hash_of_the_arguments_leaves_under_hash_only(
    receiver, admin_user, agent, settings
):
    settings.QUIVER_CALL_ARGUMENTS_HASH_ONLY = True
    webhook_for(receiver)
    approval = ask_approval(agent, arguments={"card": CARD})
    delivery.attempt(attempts_of(approval)[0].pk)

    [got] = receiver.wait_for(1)
    assert CARD_PART.encode() not in got.body
    sent = json.loads(got.body)["approval"]
    assert sent["arguments"] is None and sent["arguments_omitted"] == "hash_only"
    assert sent["arguments_hash"] == approval.arguments_hash
    assert CARD_PART not in json.dumps(attempts_of(approval)[0].payload)


def test_a_500_is_retried_after_a_growing_wait_then_delivered(
    receiver, admin_user, agent, settings
):
    settings.QUIVER_WEBHOOK_BACKOFF_S = 10
    receiver.answer((500, "upstream sick"), 200)
    webhook_for(receiver)
    [row] = attempts_of(ask_approval(agent))
    retrying, delivered = counted("retrying"), counted("delivered")

    wait = delivery.attempt(row.pk)
    assert wait is not None and 8 <= wait <= 12  # 10 s, jittered ±20%
    row.refresh_from_db()
    assert (row.status, row.attempts, row.last_status_code) == ("pending", 1, 500)
    assert row.last_error == "HTTP 500 Internal Server Error: upstream sick"
    assert row.next_attempt > timezone.now() + timedelta(seconds=7)
    assert delivery.attempt(row.pk) is None  # not due yet: nothing is sent
    assert len(receiver.got) == 1

    due_now(row)
    assert delivery.attempt(row.pk) is None
    first, second = receiver.wait_for(2)
    assert first.body == second.body  # the same event, the same bytes
    assert first.headers["Quiver-Event-Id"] == second.headers["Quiver-Event-Id"]
    row.refresh_from_db()
    assert (row.status, row.attempts, row.last_status_code) == ("delivered", 2, 200)
    assert row.last_error == ""
    assert counted("retrying") == retrying + 1
    assert counted("delivered") == delivered + 1


def test_the_backoff_doubles_up_to_its_cap_and_honours_retry_after(settings):
    settings.QUIVER_WEBHOOK_BACKOFF_S = 10
    settings.QUIVER_WEBHOOK_BACKOFF_MAX_S = 60
    waits = [delivery.backoff(n) for n in range(1, 6)]
    for wait, base in zip(waits, [10, 20, 40, 60, 60], strict=True):
        assert 0.8 * base <= wait <= 1.2 * base
    assert delivery.backoff(1, retry_after=45) >= 45
    assert delivery.backoff(1, retry_after=9999) <= 60


def test_a_delivery_out_of_attempts_fails_and_a_replay_delivers_it(
    receiver, admin_user, agent, settings
):
    settings.QUIVER_WEBHOOK_MAX_ATTEMPTS = 2
    receiver.answer(503, 503, 204)
    webhook_for(receiver)
    [row] = attempts_of(ask_approval(agent))
    delivery.attempt(row.pk)
    due_now(row)
    assert delivery.attempt(row.pk) is None
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("failed", 2)

    replay = replay_delivery(row, actor=admin_user)
    assert delivery.attempt(replay.pk) is None

    got = receiver.wait_for(3)
    assert len({r.headers["Quiver-Event-Id"] for r in got}) == 1
    replay.refresh_from_db()
    row.refresh_from_db()
    assert (replay.status, replay.attempts, replay.replay_of_id) == (
        "delivered",
        1,
        row.pk,
    )
    assert row.status == "failed"  # the log keeps the failure


def test_a_redirect_is_not_followed(receiver, admin_user, agent):
    receiver.answer((307, "", {"Location": "http://169.254.169.254/latest/"}))
    webhook_for(receiver)
    [row] = attempts_of(ask_approval(agent))
    delivery.attempt(row.pk)
    row.refresh_from_db()
    assert row.status == "pending" and row.last_status_code == 307
    assert "redirects are not followed" in row.last_error
    assert len(receiver.got) == 1


def test_the_log_never_holds_the_url_s_secret_path_or_the_signing_secret(
    receiver, admin_user, agent, caplog
):
    caplog.set_level(logging.DEBUG)
    slack_path = "/services/T0AAA/B0BBB/xoxb-very-secret-token"
    hook, secret = webhook_for(receiver)
    hook.url = receiver.url.replace("/hooks/quiver", slack_path)
    hook.save(update_fields=["url"])
    echo = f"bad request to {hook.url} ({slack_path}) signed with {secret}"
    receiver.answer((400, echo))
    [row] = attempts_of(ask_approval(agent))
    delivery.attempt(row.pk)

    row.refresh_from_db()
    assert row.last_error.startswith("HTTP 400 Bad Request: bad request to")
    assert "xoxb-very-secret-token" not in row.last_error
    assert secret not in row.last_error
    assert secret not in json.dumps(row.payload)
    assert "xoxb-very-secret-token" not in caplog.text
    assert "HTTP Request: POST http://127.0.0.1:" in caplog.text  # logged, masked


def test_a_name_that_resolves_to_the_metadata_address_is_refused_at_connect(
    receiver, admin_user, agent, monkeypatch
):
    port = receiver.url.split(":")[2].split("/")[0]
    hook, _secret = webhook_for(receiver)
    hook.url = f"http://hooks.example.test:{port}/hooks/quiver"  # saved: allowed
    hook.save(update_fields=["url"])
    monkeypatch.setattr(netguard, "resolve", lambda host, port: ["169.254.169.254"])
    refused = counted("refused")
    [row] = attempts_of(ask_approval(agent))

    assert delivery.attempt(row.pk) is None

    row.refresh_from_db()
    assert row.status == "failed" and row.last_status_code is None
    assert "denied address" in row.last_error
    assert receiver.got == []
    assert counted("refused") == refused + 1


def test_the_connection_goes_to_the_address_that_was_checked(
    receiver, admin_user, agent, monkeypatch
):
    port = receiver.url.split(":")[2].split("/")[0]
    hook, _secret = webhook_for(receiver)
    hook.url = f"http://only-in-our-resolver.test:{port}/hooks/quiver"
    hook.save(update_fields=["url"])
    monkeypatch.setattr(netguard, "resolve", lambda host, port: ["127.0.0.1"])
    [row] = attempts_of(ask_approval(agent))
    delivery.attempt(row.pk)
    assert len(receiver.wait_for(1)) == 1


def test_nothing_is_sent_to_another_catalog_s_webhook(receiver, admin_user, agent):
    other = Catalog.objects.create(slug="finance", name="Finance")
    webhook_for(receiver, catalog=other, name="finance-ops")
    hidden = make_tool(
        name="payroll.wire_salary",
        requires_approval=True,
        allowed_roles=["payroll"],
        safe=False,
    )
    approval = ask_approval(agent, tool=hidden)
    with TestCase.captureOnCommitCallbacks(execute=True):
        approve(approval, person=admin_user)
    assert attempts_of(approval) == []

    own = make_tool(other, "ledger.close_month", requires_approval=True)
    mine = ask_approval(agent, tool=own)
    [row] = attempts_of(mine)
    assert row.webhook.catalog == other
    delivery.attempt(row.pk)
    [got] = receiver.wait_for(1)
    assert b"payroll" not in got.body and b"wire_salary" not in got.body
    assert not Delivery.objects.exclude(approval_id=mine.pk).exists()


def test_only_the_events_a_webhook_takes_are_sent(receiver, admin_user, agent):
    webhook_for(receiver, events=["approval.decided"])
    approval = ask_approval(agent)
    assert attempts_of(approval) == []
    with TestCase.captureOnCommitCallbacks(execute=True):
        deny(approval, person=admin_user, reason="<!channel> not today & never")
    [row] = attempts_of(approval)
    assert row.event == "approval.decided"
    assert row.payload["approval"]["status"] == "denied"
    assert row.payload["approval"]["reason"] == "<!channel> not today & never"


def test_a_step_that_rolls_back_sends_nothing(receiver, admin_user, agent):
    webhook_for(receiver)
    approval = ask_approval(agent)
    before = Delivery.objects.count()
    with TestCase.captureOnCommitCallbacks(execute=True):
        try:
            with transaction.atomic():
                approve(approval, person=admin_user)
                raise RuntimeError("the request failed after the decision")
        except RuntimeError:
            pass
    assert Delivery.objects.count() == before
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_a_slack_webhook_gets_text_and_blocks_with_mentions_escaped(
    receiver, admin_user, agent, settings
):
    settings.QUIVER_PUBLIC_URL = "https://quiver.example.com"
    webhook_for(receiver, format="slack")
    approval = ask_approval(agent, arguments={"note": "<!here> deploy <b>now</b>"})
    delivery.attempt(attempts_of(approval)[0].pk)

    [got] = receiver.wait_for(1)
    body = json.loads(got.body)
    assert body["text"].startswith(":hourglass_flowing_sand: Approval needed: ")
    assert "`files.delete_file`" in body["text"]
    assert (
        f"<https://quiver.example.com/approvals/#approval-{approval.pk}|Open in Quiver>"
        in body["text"]
    )
    assert [block["type"] for block in body["blocks"]] == [
        "section",
        "section",
        "context",
    ]
    arguments = body["blocks"][1]["text"]["text"]
    assert "&lt;!here&gt;" in arguments and "<!here>" not in arguments


def test_after_a_rotation_both_secrets_sign_during_the_grace_only(
    receiver, admin_user, agent
):
    hook, old = webhook_for(receiver)
    hook, new = rotate_secret(hook, grace_hours=1, actor=admin_user)
    [row] = attempts_of(ask_approval(agent))
    delivery.attempt(row.pk)
    [got] = receiver.wait_for(1)
    header = got.headers["Quiver-Signature"]
    assert header.count("v1=") == 2
    assert verify(new, header, got.body) and verify(old, header, got.body)

    hook, newest = rotate_secret(hook, grace_hours=0, actor=admin_user)
    [row] = attempts_of(ask_approval(agent))
    delivery.attempt(row.pk)
    latest = receiver.wait_for(2)[1]
    assert latest.headers["Quiver-Signature"].count("v1=") == 1
    assert verify(newest, latest.headers["Quiver-Signature"], latest.body)
    assert not verify(new, latest.headers["Quiver-Signature"], latest.body)


def test_a_paused_webhook_gets_nothing(receiver, admin_user, agent):
    webhook_for(receiver, active=False)
    assert attempts_of(ask_approval(agent)) == []


def test_an_approval_asked_by_a_person_is_sent_too(receiver, admin_user):
    webhook_for(receiver)
    person = make_user("pat")
    [row] = attempts_of(ask_approval(person))
    assert row.payload["approval"]["agent"] == "pat"


def test_a_webhook_paused_before_its_delivery_was_due_fails_it(
    receiver, admin_user, agent
):
    hook, _secret = webhook_for(receiver)
    [row] = attempts_of(ask_approval(agent))
    hook.active = False
    hook.save(update_fields=["active"])
    assert delivery.attempt(row.pk) is None
    row.refresh_from_db()
    assert row.status == "failed" and "paused" in row.last_error
    assert receiver.got == []


def test_the_sweep_gives_back_a_dead_worker_s_attempt_and_sends_what_is_due(
    receiver, admin_user, agent, settings
):
    settings.QUIVER_WEBHOOK_SWEEP_S = 5
    webhook_for(receiver)
    [row] = attempts_of(ask_approval(agent))
    past = timezone.now() - timedelta(minutes=5)
    Delivery.objects.filter(pk=row.pk).update(
        status="sending", attempts=1, lease_until=past, next_attempt=past
    )
    assert delivery.sweep()["lost"] == 1
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("pending", 1)
    assert "worker stopped" in row.last_error
    Delivery.objects.filter(pk=row.pk).update(next_attempt=past)
    assert delivery.sweep()["sent"] == 1
    assert delivery.attempt(row.pk) is None  # what the sent task does
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("delivered", 2)


@pytest.mark.parametrize("status", [200, 503])
def test_an_attempt_whose_row_was_taken_back_records_and_counts_nothing(
    receiver, admin_user, agent, status
):
    webhook_for(receiver)
    [row] = attempts_of(ask_approval(agent))
    late = delivery._claim(row.pk)  # a worker's attempt, whose lease then ran out
    assert late is not None
    Delivery.objects.filter(pk=row.pk).update(attempts=2)  # the next attempt's now
    before = {outcome: counted(outcome) for outcome in ("delivered", "retrying")}

    wait = delivery._record(late, delivery.Sent(status=status), {})

    assert wait is None  # no second retry queued beside the new attempt's
    assert {outcome: counted(outcome) for outcome in before} == before
    row.refresh_from_db()
    assert (row.status, row.attempts, row.last_status_code) == ("sending", 2, None)


def test_two_attempts_at_once_send_once(receiver, admin_user, agent):
    webhook_for(receiver)
    [row] = attempts_of(ask_approval(agent))
    Delivery.objects.filter(pk=row.pk).update(status="sending", attempts=1)
    assert delivery.attempt(row.pk) is None  # held by the other attempt
    assert receiver.got == []
