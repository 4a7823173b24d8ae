"""Notifications fixtures: a real HTTP receiver for webhooks (a threaded
http.server that records every request and answers as it is told), the
signature check written from the documentation alone, and approvals made the
way the call path makes them."""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any

import pytest
from django.test import TestCase
from rest_framework.test import APIClient

from calls.approvals import request_approval
from calls.models import Approval
from catalog.models import Catalog, Tool
from catalog.services import ensure_default_catalog
from identity.services import create_api_client
from notify.models import Webhook
from notify.services import create_webhook
from tests.calls.approval_rows import restore_approver_groups
from tests.factories import make_tool
from tests.receiver import Receiver


def verify(secret: str, header: str, body: bytes, tolerance: int = 300) -> bool:
    """The receiver's check, as docs/how-to/operating.md writes it."""
    parts = [item.split("=", 1) for item in header.split(",")]
    stamp = next(value for key, value in parts if key == "t")
    if abs(time.time() - int(stamp)) > tolerance:
        return False
    signed = stamp.encode() + b"." + body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return any(k == "v1" and hmac.compare_digest(v, expected) for k, v in parts)


@pytest.fixture
def admin_api(api: APIClient, admin_user: Any) -> APIClient:
    api.force_login(admin_user)
    return api


@pytest.fixture
def agent(db: None) -> Any:
    """An agent key's service user (every catalog)."""
    client, _key = create_api_client("files-bot", "agent", catalogs="*")
    return client.user


def webhook_for(
    receiver: Receiver, catalog: Catalog | None = None, actor: Any = None, **fields: Any
) -> tuple[Webhook, str]:
    from django.contrib.auth import get_user_model

    catalog = catalog or ensure_default_catalog()
    actor = actor or get_user_model().objects.filter(is_superuser=True).first()
    fields.setdefault("name", "ops")
    return create_webhook(catalog, url=receiver.url, actor=actor, **fields)


# A card number whose spaced digits cannot occur by chance in an id, a hash or a
# timestamp, so "not in the body" fails only when the value itself leaked.
CARD = "4111 1111 1111 1111"
CARD_PART = "1111 1111"


def ask_approval(
    requester: Any,
    tool: Tool | None = None,
    arguments: dict[str, Any] | None = None,
) -> Approval:
    """A pending approval, asked as the call path asks (its hooks run: the
    test's transaction commits nothing, so they run here on purpose)."""
    tool = (
        tool
        or Tool.objects.filter(name="files.delete_file").first()
        or make_tool(name="files.delete_file", requires_approval=True)
    )
    arguments = {"path": "/srv/reports/q3.pdf"} if arguments is None else arguments
    with TestCase.captureOnCommitCallbacks(execute=True):
        return request_approval(
            tool=tool,
            arguments=arguments,
            caller=requester,
            selection_id=None,
            request_id=None,
        )


@pytest.fixture
def approver_groups(db: None) -> None:
    restore_approver_groups()
