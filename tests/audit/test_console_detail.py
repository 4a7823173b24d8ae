"""/audit/<id>/: a selection's page, a tool-call check's page, a change's page with
its diff; and /audit/verify/ running the chain check."""

from __future__ import annotations

import pytest
from django.db import connection

from audit.models import AuditEvent
from audit.services import Damage, seal_pending
from selection.services.settings import update_selection_settings
from tests.factories import ensure_default_catalog

pytestmark = pytest.mark.django_db


def test_a_selections_page_shows_the_query_caller_picks_and_exclusions(
    as_compliance, trail
):
    seal_pending()
    response = as_compliance.get(f"/audit/{trail.refund.pk}/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "refund the card payment" in page
    picks = response.context["picks"]
    assert [p["tool"]["name"] for p in picks] == [
        t["name"] for t in trail.refund.output["tools"]
    ]
    assert all(bar["width"] >= 0 for p in picks for bar in p["bars"])
    account = response.context["account"]
    assert sum(stage["count"] for stage in account) == len(
        trail.refund.output["excluded"]
    )
    assert "get_weather" in [
        name for s in account for r in s["rules"] for name in r["names"]
    ]
    refund = AuditEvent.objects.get(pk=trail.refund.pk)
    assert f"{refund.hash}" in page and 'data-testid="seq">' + str(refund.seq) in page


def test_a_selections_page_links_the_tool_calls_checked_against_it(
    as_compliance, trail
):
    response = as_compliance.get(f"/audit/{trail.refund.pk}/")
    linked = [v["event"].pk for v in response.context["validations"]]
    assert linked == [trail.validation.pk]
    other = as_compliance.get(f"/audit/{trail.weather.pk}/")
    assert other.context["validations"] == []


def test_a_conversation_marks_the_latest_user_turn(as_compliance, with_key, trail):
    api = with_key("agent", name="chat-bot")
    messages = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "refund my card payment"},
    ]
    answer = api.post(
        "/api/v1/select", {"messages": messages, "scorer": "bm25f"}, format="json"
    )
    event = AuditEvent.objects.get(selection_id=answer.json()["selection_id"])
    response = as_compliance.get(f"/audit/{event.pk}/")
    assert response.context["latest_user_turn"] == 2
    assert "refund my card payment" in response.context["line"]


def test_a_tool_call_checks_page_shows_its_flags_and_its_selection(
    as_compliance, trail
):
    response = as_compliance.get(f"/audit/{trail.validation.pk}/")
    assert response.context["selection"].pk == trail.refund.pk
    [call] = response.context["calls"]
    assert call["valid"] is False
    assert call["flags"] and call["flags"][0] in response.content.decode()


def test_a_changes_page_shows_who_and_the_diff(as_compliance, compliance):
    catalog = ensure_default_catalog()
    update_selection_settings(catalog, {"default_scorer": "bm25f"}, actor=compliance)
    event = AuditEvent.objects.get(event_type="settings")
    response = as_compliance.get(f"/audit/{event.pk}/")
    assert response.status_code == 200
    assert response.context["event"].actor_name == "cora"
    added = [
        line["text"] for line in response.context["lines"] if line["kind"] == "added"
    ]
    assert any("bm25f" in text for text in added)
    assert 'data-testid="diff"' in response.content.decode()


def test_an_event_outside_the_readers_catalogs_is_a_404(client, trail):
    from identity.models import UserCatalogAccess
    from tests.factories import make_user

    reader = make_user("rita", groups=("compliance",))
    UserCatalogAccess.objects.create(user=reader, catalogs=["elsewhere"])
    client.force_login(reader)
    assert client.get(f"/audit/{trail.refund.pk}/").status_code == 404


def test_verify_reports_an_intact_chain_with_its_count(as_compliance, trail):
    page = as_compliance.get("/audit/verify/")
    assert 'data-testid="run-verify"' in page.content.decode()
    response = as_compliance.post("/audit/verify/", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="verify-result"')
    check = response.context["check"]
    assert check["ok"] and check["checked"] == AuditEvent.objects.count()
    assert f"{check['checked']} records checked" in body


def test_verify_names_the_first_bad_record_and_links_it(as_compliance, trail):
    seal_pending()
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE audit_auditevent SET summary = 'edited' WHERE id = %s",
            [trail.weather.pk],
        )
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")
    response = as_compliance.post("/audit/verify/")
    body = response.content.decode()
    assert response.context["check"]["kind"] == Damage.CONTENT_EDITED
    assert f'href="/audit/{trail.weather.pk}/"' in body
    assert Damage.CONTENT_EDITED in body


def test_a_curator_may_not_verify_from_the_console(as_curator):
    assert as_curator.post("/audit/verify/").status_code == 403
