"""The delivery log never shows a webhook's secrets, however a receiver echoes
them back: a query value alone (as sent or decoded), a path segment alone, the
signing secret or the signature header, in JSON (slashes escaped or not), in
base64, in UTF-16, or cut by the excerpt's end. Nothing of eight characters or
more of any of them is left in the line the API and the console show."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from notify import delivery
from notify.models import Delivery
from tests.notify.conftest import ask_approval, webhook_for
from tests.receiver import Received

pytestmark = pytest.mark.django_db

TOKEN = "tok+en/value=xyz123"  # decoded; the URL holds it percent-encoded
SENT_TOKEN = quote(TOKEN, safe="")
SEGMENT = "xoxb-segment-secret"


def signature(got: Received) -> str:
    return got.headers["Quiver-Signature"]


ECHOES: dict[str, Callable[[str], Any]] = {
    "the query value decoded": lambda s: f"bad token {TOKEN}",
    "the query value as sent": lambda s: f"bad token {SENT_TOKEN}",
    "the query value in JSON with escaped slashes": lambda s: json.dumps(
        {"token": TOKEN}
    ).replace("/", "\\/"),
    "the query value in base64": lambda s: base64.b64encode(TOKEN.encode()).decode(),
    "the query value in UTF-16": lambda s: f"token {TOKEN}".encode("utf-16"),
    "the query value cut by the excerpt's end": lambda s: "x" * 190 + TOKEN,
    "the query value across a line break": lambda s: f"{TOKEN[:9]}\n{TOKEN[9:]}",
    "a path segment alone": lambda s: f"unknown hook {SEGMENT}",
    "the signing secret": lambda s: f"signed with {s}",
    "the signature header": lambda s: signature,
}


def hook_with_secrets(receiver) -> tuple[Any, str]:
    hook, secret = webhook_for(receiver)
    base = receiver.url.replace("/hooks/quiver", f"/hooks/{SEGMENT}")
    hook.url = f"{base}?token={SENT_TOKEN}&v=2"
    hook.save(update_fields=["url"])
    return hook, secret


def pieces(value: str, size: int = 8) -> set[str]:
    return {value[i : i + size] for i in range(len(value) - size + 1)}


@pytest.mark.parametrize("echo", ECHOES, ids=list(ECHOES))
def test_no_secret_of_the_webhook_is_left_in_its_delivery_log(
    receiver, admin_user, agent, echo
):
    _hook, secret = hook_with_secrets(receiver)
    body = ECHOES[echo](secret)
    headers = {"Content-Type": "text/plain; charset=utf-16"}
    receiver.answer((400, body, headers if isinstance(body, bytes) else {}))
    [row] = Delivery.objects.filter(approval_id=ask_approval(agent).pk)

    delivery.attempt(row.pk)

    row.refresh_from_db()
    [got] = receiver.got
    assert row.last_error.startswith("HTTP 400 Bad Request")
    assert "••••••" in row.last_error  # the echo was there, and masked
    secrets = [TOKEN, SENT_TOKEN, SEGMENT, secret, signature(got)]
    left = {p for s in secrets for p in pieces(s) if p in row.last_error}
    assert left == set(), row.last_error


def test_an_answer_that_echoes_nothing_is_logged_as_it_came(
    receiver, agent, admin_user
):
    hook_with_secrets(receiver)
    receiver.answer((503, "queue full, retry later"))
    [row] = Delivery.objects.filter(approval_id=ask_approval(agent).pk)
    delivery.attempt(row.pk)
    row.refresh_from_db()
    assert row.last_error == "HTTP 503 Service Unavailable: queue full, retry later"
