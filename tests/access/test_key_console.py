"""The console's API keys page: admins only; the key is shown once; audited."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from identity.models import ApiClient
from identity.services.clients import hash_key
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_admin(client):
    client.force_login(make_user("root", superuser=True))
    return client


def test_a_curator_cannot_open_the_keys_page(as_curator):
    assert as_curator.get("/keys/").status_code == 403


def test_the_navigation_offers_api_keys_only_to_admins(as_curator, client):
    assert "API keys" not in as_curator.get("/tools/").content.decode()
    client.force_login(make_user("root", superuser=True))
    assert "API keys" in client.get("/tools/").content.decode()


def test_an_admin_creates_a_key_and_sees_it_once(as_admin):
    response = as_admin.post(
        "/keys/",
        {
            "name": "support-bot",
            "scope": "agent",
            "roles": "support, billing",
            "all_catalogs": "on",
        },
    )
    html = response.content.decode()
    assert response.status_code == 200
    made = ApiClient.objects.get(name="support-bot")
    assert made.roles == ["support", "billing"]
    assert made.allow_unsafe is False
    assert made.owner.username == "root"
    key = html.split('data-testid="new-key"')[1].split("<code>")[1].split("</code>")[0]
    assert hash_key(key) == made.key_hash
    assert key not in as_admin.get("/keys/").content.decode()
    assert AuditEvent.objects.filter(event_type="client_created").count() == 1


def test_a_bad_key_form_names_the_field_and_makes_nothing(as_admin):
    response = as_admin.post("/keys/", {"name": "bad name!", "scope": "agent"})
    assert response.status_code == 200
    assert "Letters, digits" in response.content.decode()
    assert not ApiClient.objects.exists()


def test_an_admin_rotates_and_revokes_a_key(as_admin):
    as_admin.post("/keys/", {"name": "bot", "scope": "agent", "all_catalogs": "on"})
    made = ApiClient.objects.get(name="bot")
    old_hash = made.key_hash
    as_admin.post(f"/keys/{made.pk}/rotate/")
    made.refresh_from_db()
    assert made.key_hash != old_hash
    as_admin.post(f"/keys/{made.pk}/revoke/")
    made.refresh_from_db()
    assert made.revoked
    keys = AuditEvent.objects.exclude(event_type="access_changed")  # root's making
    kinds = list(keys.order_by("id").values_list("event_type", flat=True))
    assert kinds == ["client_created", "client_rotated", "client_revoked"]
