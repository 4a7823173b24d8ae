"""The webhooks pages: admins add one and see its secret once, edit it, rotate
it, replay a failed delivery and delete it, each an audit event; everyone else
gets the styled 403 (or a 404 for a catalog they cannot see)."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEvent
from notify.models import Delivery, Webhook
from tests.notify.conftest import ask_approval

pytestmark = pytest.mark.django_db
PAGE = "/catalogs/default/webhooks/"


def actions() -> list[str]:
    rows = AuditEvent.objects.filter(event_type="webhook_changed").order_by("id")
    return [row.input["action"] for row in rows]


def test_an_admin_adds_a_webhook_and_sees_its_secret_once(client, admin_user, receiver):
    client.force_login(admin_user)
    assert b"No webhooks yet" in client.get(PAGE).content
    answer = client.post(
        PAGE,
        {
            "name": "ops",
            "url": receiver.url,
            "events": ["approval.requested"],
            "format": "quiver",
            "active": "on",
        },
    )
    assert answer.status_code == 200
    text = answer.content.decode()
    [secret] = re.findall(r"whsec_[A-Za-z0-9_-]+", text)
    hook = Webhook.objects.get()
    assert hook.events == ["approval.requested"]
    assert secret not in client.get(PAGE).content.decode()
    assert secret not in client.get(f"/webhooks/{hook.pk}/").content.decode()
    assert actions() == ["create"]


def test_a_metadata_url_is_refused_on_the_form(client, admin_user):
    client.force_login(admin_user)
    answer = client.post(
        PAGE,
        {
            "name": "meta",
            "url": "http://169.254.169.254/",
            "events": ["approval.requested"],
            "format": "quiver",
        },
    )
    assert "denied address" in answer.content.decode()
    assert not Webhook.objects.exists() and actions() == []


def test_the_detail_page_edits_rotates_replays_and_deletes(
    client, admin_user, agent, receiver
):
    client.force_login(admin_user)
    client.post(
        PAGE,
        {
            "name": "ops",
            "url": receiver.url,
            "events": ["approval.requested"],
            "format": "quiver",
            "active": "on",
        },
    )
    hook = Webhook.objects.get()
    ask_approval(agent)
    failed = Delivery.objects.get()
    Delivery.objects.filter(pk=failed.pk).update(
        status="failed", attempts=8, last_error="HTTP 500 Internal Server Error"
    )
    page = client.get(f"/webhooks/{hook.pk}/").content.decode()
    assert "HTTP 500 Internal Server Error" in page and "Replay" in page

    edited = client.post(
        f"/webhooks/{hook.pk}/",
        {
            "name": "ops",
            "url": receiver.url,
            "events": ["approval.requested", "approval.used"],
            "format": "slack",
        },
    )
    assert edited.status_code == 302
    hook.refresh_from_db()
    assert hook.format == "slack" and not hook.active
    rotated = client.post(
        f"/webhooks/{hook.pk}/rotate/", {"grace_hours": 0}
    ).content.decode()
    assert len(re.findall(r"whsec_[A-Za-z0-9_-]+", rotated)) == 1
    replayed = client.post(
        f"/webhooks/{hook.pk}/deliveries/{failed.pk}/replay/", follow=True
    )
    assert b"is sent again as delivery" in replayed.content
    assert Delivery.objects.count() == 2
    filtered = client.get(
        f"/webhooks/{hook.pk}/", {"status": "failed"}, HTTP_HX_REQUEST="true"
    )
    assert filtered.content.decode().count("data-delivery=") == 1
    client.post(f"/webhooks/{hook.pk}/delete/")
    assert not Webhook.objects.exists() and not Delivery.objects.exists()
    assert actions() == ["create", "update", "rotate", "replay", "delete"]


def test_people_who_are_not_admins_get_403(
    client, curator, compliance, admin_user, receiver
):
    client.force_login(admin_user)
    client.post(
        PAGE,
        {
            "name": "ops",
            "url": receiver.url,
            "events": ["approval.requested"],
            "format": "quiver",
        },
    )
    hook = Webhook.objects.get()
    for person in (curator, compliance):
        client.force_login(person)
        assert client.get(PAGE).status_code == 403
        assert client.get(f"/webhooks/{hook.pk}/").status_code == 403
        assert client.post(f"/webhooks/{hook.pk}/delete/").status_code == 403
    assert Webhook.objects.exists()
    assert client.get("/catalogs/nope/webhooks/").status_code == 404
