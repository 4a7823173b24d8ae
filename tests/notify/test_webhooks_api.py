"""The webhooks API: admins of the catalog only, the secret shown once, every
change one audit event without any secret, bad input a 400 naming the field,
the delivery log paged and a failed delivery replayed."""

from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from catalog.models import Catalog
from notify.models import Delivery, Webhook
from notify.signing import decrypt_secret
from tests.notify.conftest import ask_approval

pytestmark = pytest.mark.django_db
HOOKS = "/api/v1/catalogs/default/webhooks"
URL = "http://10.0.0.7:8080/hooks/quiver"


def events(action: str | None = None) -> list[AuditEvent]:
    rows = AuditEvent.objects.filter(event_type="webhook_changed").order_by("id")
    return [r for r in rows if action is None or r.input["action"] == action]


def add(api, **fields):
    return api.post(HOOKS, {"name": "ops", "url": URL, **fields}, format="json")


def test_an_admin_adds_a_webhook_and_sees_its_secret_once(admin_api):
    answer = add(admin_api, events=["approval.requested"], format="slack")
    assert answer.status_code == 201, answer.json()
    made = answer.json()
    assert made["secret"].startswith("whsec_") and len(made["secret"]) > 40
    assert made["events"] == ["approval.requested"] and made["format"] == "slack"
    stored = Webhook.objects.get(pk=made["id"])
    assert made["secret"] not in stored.secret_encrypted
    assert decrypt_secret(stored.secret_encrypted) == made["secret"]

    again = admin_api.get(f"/api/v1/webhooks/{made['id']}").json()
    listed = admin_api.get(HOOKS).json()
    assert "secret" not in again and made["secret"] not in json.dumps(listed)
    [event] = events("create")
    assert event.input["url_origin"] == "http://10.0.0.7:8080"
    assert made["secret"] not in json.dumps([event.input, event.output])
    assert "/hooks/quiver" not in json.dumps(event.input)  # a path may be a secret


def test_every_change_is_an_audit_event_and_none_holds_a_secret(admin_api):
    made = add(admin_api).json()
    hook = f"/api/v1/webhooks/{made['id']}"
    assert admin_api.patch(hook, {"active": False}, format="json").status_code == 200
    rotated = admin_api.post(f"{hook}/rotate", {"grace_hours": 2}, format="json")
    assert rotated.status_code == 200
    new_secret = rotated.json()["secret"]
    assert new_secret != made["secret"] and rotated.json()["previous_secret_until"]
    assert admin_api.delete(hook).status_code == 204

    actions = [e.input["action"] for e in events()]
    assert actions == ["create", "update", "rotate", "delete"]
    assert events("update")[0].input["changed"] == ["active"]
    text = json.dumps([[e.input, e.output] for e in events()])
    assert made["secret"] not in text and new_secret not in text
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(
    ("fields", "field", "rule"),
    [
        ({"url": "http://169.254.169.254/latest/"}, "url", "denied address"),
        ({"url": "http://[::ffff:a9fe:a9fe]/x"}, "url", "denied address"),
        ({"url": "http://metadata.google.internal/x"}, "url", "denied address"),
        ({"url": "ftp://example.com/x"}, "url", "http:// or https://"),
        ({"url": "http://user:pw@example.com/x"}, "url", "user or password"),
        ({"url": "http://example.com/a b"}, "url", "not allowed"),
        ({"events": []}, "events", "non-empty"),
        ({"events": ["approval.eaten"]}, "events", "not a valid choice"),
        ({"format": "teams"}, "format", "not a valid choice"),
        ({"name": "-bad"}, "name", "starting with a letter or digit"),
        ({"secret": "mine"}, "secret", "is not a field of this body"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(admin_api, fields, field, rule):
    answer = add(admin_api, **fields)
    assert answer.status_code == 400, answer.json()
    assert rule in json.dumps(answer.json()["fields"][field])
    assert not Webhook.objects.exists() and not events()


def test_a_name_is_unique_in_its_catalog(admin_api):
    assert add(admin_api).status_code == 201
    answer = add(admin_api)
    assert answer.status_code == 400
    assert "already exists" in answer.json()["fields"]["name"][0]


def test_a_catalog_has_a_bounded_number_of_webhooks(admin_api, settings):
    settings.QUIVER_WEBHOOKS_PER_CATALOG = 2
    assert add(admin_api, name="a").status_code == 201
    assert add(admin_api, name="b").status_code == 201
    answer = add(admin_api, name="c")
    assert answer.status_code == 400 and "at most 2" in answer.json()["detail"]


def test_only_admins_manage_webhooks(api, with_key, curator, compliance, admin_api):
    made = add(admin_api).json()
    admin_api.logout()
    for person in (curator, compliance):
        api.force_login(person)
        assert api.get(HOOKS).status_code == 403
        assert api.get(f"/api/v1/webhooks/{made['id']}").status_code == 403
        assert add(api, name="mine").status_code == 403
        api.logout()
    agent = with_key("agent")
    assert agent.get(HOOKS).status_code == 403
    assert agent.post(f"/api/v1/webhooks/{made['id']}/rotate").status_code == 403
    assert len(events()) == 1


def test_an_admin_of_another_catalog_gets_404s(with_key, admin_api):
    Catalog.objects.create(slug="finance", name="Finance")
    made = add(admin_api).json()
    admin_api.logout()
    other = with_key("admin", "finance-admin", catalogs=["finance"])
    assert other.get(HOOKS).status_code == 404
    assert other.get(f"/api/v1/webhooks/{made['id']}").status_code == 404
    assert other.delete(f"/api/v1/webhooks/{made['id']}").status_code == 404
    assert other.get("/api/v1/catalogs/finance/webhooks").status_code == 200
    assert Webhook.objects.count() == 1


def test_an_admin_key_manages_its_catalog_s_webhooks(with_key):
    api = with_key("admin", "ops-admin")
    answer = add(api)
    assert answer.status_code == 201 and answer.json()["secret"]


def test_the_delivery_log_is_paged_and_filtered(admin_api, agent, receiver):
    made = admin_api.post(
        HOOKS, {"name": "ops", "url": receiver.url}, format="json"
    ).json()
    for n in range(3):
        ask_approval(agent, arguments={"path": f"/srv/{n}.log"})
    Delivery.objects.filter(pk=Delivery.objects.order_by("id").first().pk).update(
        status="failed", last_error="HTTP 500 Internal Server Error"
    )
    log = f"/api/v1/webhooks/{made['id']}/deliveries"
    answer = admin_api.get(log).json()
    assert answer["count"] == 3 and len(answer["results"]) == 3
    first = answer["results"][-1]
    assert first["event"] == "approval.requested" and first["attempts"] == 0
    assert "payload" not in first and "secret" not in json.dumps(answer)
    failed = admin_api.get(log, {"status": "failed"}).json()
    assert failed["count"] == 1
    assert admin_api.get(log, {"status": "lost"}).status_code == 400
    assert admin_api.get(log, {"colour": "red"}).status_code == 400

    replay = admin_api.post(f"{log}/{failed['results'][0]['id']}/replay")
    assert replay.status_code == 202, replay.json()
    assert replay.json()["replay_of"] == failed["results"][0]["id"]
    assert admin_api.get(log).json()["count"] == 4
    [event] = events("replay")
    assert event.input["delivery_id"] == failed["results"][0]["id"]

    delivered = answer["results"][0]["id"]
    again = admin_api.post(f"{log}/{delivered}/replay")
    assert again.status_code == 409 and again.json()["fields"]["status"]


def test_another_webhook_s_delivery_is_a_404(admin_api, agent, receiver):
    one = admin_api.post(HOOKS, {"name": "a", "url": receiver.url}, format="json")
    two = admin_api.post(HOOKS, {"name": "b", "url": receiver.url}, format="json")
    ask_approval(agent)
    theirs = Delivery.objects.get(webhook_id=two.json()["id"])
    Delivery.objects.filter(pk=theirs.pk).update(status="failed")
    answer = admin_api.post(
        f"/api/v1/webhooks/{one.json()['id']}/deliveries/{theirs.pk}/replay"
    )
    assert answer.status_code == 404


def test_rotating_with_a_grace_out_of_range_is_a_400(admin_api):
    made = add(admin_api).json()
    answer = admin_api.post(
        f"/api/v1/webhooks/{made['id']}/rotate", {"grace_hours": 721}, format="json"
    )
    assert answer.status_code == 400 and "grace_hours" in answer.json()["fields"]
    assert len(events()) == 1
