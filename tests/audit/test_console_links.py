"""A selection's page links what it depended on: each tool to the exact version it
had then (even once edited or deleted), the settings version to its change; a
change's page shows its diff field by field; /audit/changes/ lists every change."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from catalog.models import Tool
from catalog.services import create_catalog, delete_tool, update_tool
from catalog.services.tools import tool_to_spec
from identity.models import UserCatalogAccess
from selection.services.settings import update_selection_settings
from tests.factories import ensure_default_catalog, make_tool, make_user

pytestmark = pytest.mark.django_db

AMOUNT_SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "string", "description": "How much"}},
    "required": ["amount"],
}


def _select(api: Any, query: str, **options: Any) -> AuditEvent:
    body = {"query": query, "scorer": "bm25f", "explain": True} | options
    answer = api.post("/api/v1/select", body, format="json")
    assert answer.status_code == 200, answer.content
    return AuditEvent.objects.get(selection_id=answer.json()["selection_id"])


def _links(page: str, testid: str) -> list[str]:
    found = re.findall(rf'<a href="([^"]+)"[^>]*data-testid="{testid}"', page)
    return [link.replace("&amp;", "&") for link in found]


def _edit(tool: Tool, **fields: Any) -> Tool:
    spec = tool_to_spec(tool)
    for name, value in fields.items():
        setattr(spec, name, value)
    result = update_tool(tool, spec, actor=None)
    assert result.tool is not None
    return result.tool


@pytest.fixture
def refund_selection(with_key: Any) -> AuditEvent:
    make_tool(
        name="refund_payment",
        description="Refund a customer's card payment.",
        parameters=AMOUNT_SCHEMA,
        allowed_roles=[],
        tags=["payments"],
    )
    make_tool(name="get_weather", description="Current weather for a city.")
    api = with_key("agent", name="support-bot")
    return _select(api, "refund the card payment", block_tools=["get_weather"])


def test_a_selections_page_links_each_pick_and_exclusion_to_its_version(
    as_compliance, refund_selection
):
    page = as_compliance.get(f"/audit/{refund_selection.pk}/").content.decode()
    picks = refund_selection.output["tools"]
    expected = [
        reverse("audit:tool-version", args=["default", p["name"], p["version"]])
        + f"?at={refund_selection.pk}&hash={p['content_hash']}"
        for p in picks
    ]
    assert picks and _links(page, "pick-version-link") == expected
    assert reverse(
        "audit:tool-at-selection", args=[refund_selection.pk, "get_weather"]
    ) in _links(page, "excluded-version-link")


def test_a_version_page_shows_the_schema_as_it_was_after_an_edit_and_a_delete(
    as_compliance, refund_selection
):
    page = as_compliance.get(f"/audit/{refund_selection.pk}/").content.decode()
    [link] = [u for u in _links(page, "pick-version-link") if "refund_payment" in u]
    tool = Tool.objects.get(name="refund_payment")
    wider = {**AMOUNT_SCHEMA, "properties": {"amount": {"type": "number"}}}
    tool = _edit(tool, parameters=wider, allowed_roles=["finance"])
    edited = as_compliance.get(link)
    assert edited.context["definition"]["parameters"] == AMOUNT_SCHEMA
    assert "&quot;How much&quot;" in edited.content.decode()
    assert edited.context["hash_matches"] is True
    assert len(edited.context["found"].later) == 1
    delete_tool(tool, actor=None)
    gone = as_compliance.get(link)
    body = gone.content.decode()
    assert gone.status_code == 200
    assert gone.context["definition"]["parameters"] == AMOUNT_SCHEMA
    assert 'data-testid="tool-deleted"' in body
    assert "any role" in body and "payments" in body


def test_an_excluded_tool_opens_the_version_it_had_at_the_selection(
    as_compliance, refund_selection
):
    _edit(Tool.objects.get(name="get_weather"), description="Edited later.")
    url = reverse("audit:tool-at-selection", args=[refund_selection.pk, "get_weather"])
    response = as_compliance.get(url, follow=True)
    assert response.redirect_chain[0][0].startswith(
        "/audit/tools/default/get_weather/v1/"
    )
    assert response.context["definition"]["description"] == (
        "Current weather for a city."
    )


def test_the_settings_version_links_to_its_diff_with_old_and_new_values(
    as_compliance, compliance, with_key
):
    catalog = ensure_default_catalog()
    make_tool(name="refund_payment", description="Refund a card payment.")
    update_selection_settings(catalog, {"default_scorer": "bm25f"}, actor=compliance)
    update_selection_settings(catalog, {"default_scorer": "keyword"}, actor=compliance)
    selection = _select(with_key("agent"), "refund")
    assert selection.output["settings_version"] == 2
    page = as_compliance.get(f"/audit/{selection.pk}/").content.decode()
    [link] = _links(page, "settings-version-link")
    assert link == "/audit/settings/default/v2/"
    response = as_compliance.get(link, follow=True)
    rows = {row["field"]: row for row in response.context["fields"]}
    assert (rows["default_scorer"]["old"], rows["default_scorer"]["new"]) == (
        "bm25f",
        "keyword",
    )
    assert '<td class="old">bm25f</td><td class="new">keyword</td>' in (
        response.content.decode()
    )


def test_a_tool_changes_page_shows_each_field_and_schema_path_that_changed(
    as_compliance,
):
    tool = make_tool(name="refund_payment", parameters=AMOUNT_SCHEMA, safe=True)
    schema = {
        "type": "object",
        "properties": {
            "amount": {"type": "number", "description": "How much"},
            "currency": {"type": "string"},
        },
        "required": ["amount", "currency"],
    }
    _edit(tool, parameters=schema, safe=False, description="Refunds, carefully.")
    event = AuditEvent.objects.filter(event_type="tool_changed").latest("pk")
    response = as_compliance.get(f"/audit/{event.pk}/")
    rows = {row["field"]: row for row in response.context["fields"]}
    assert set(rows) == {"parameters", "safe", "description"}
    assert (rows["safe"]["old"], rows["safe"]["new"]) == ("yes", "no")
    assert rows["parameters"]["paths"] == [
        'properties › amount › type: "string" → "number"',
        'properties › currency: added {"type": "string"}',
        'required: added "currency"',
    ]
    links = _links(response.content.decode(), "change-version-link")
    assert [link.split("?")[0] for link in links] == [
        "/audit/tools/default/refund_payment/v2/",
        "/audit/tools/default/refund_payment/v1/",
    ]


def test_the_change_log_lists_a_deleted_tools_changes_each_linked(as_compliance):
    tool = make_tool(name="wipe_disk", description="Erase a disk.")
    delete_tool(_edit(tool, description="Erase a disk, really."), actor=None)
    response = as_compliance.get("/audit/changes/?catalog=default&tool=wipe_disk")
    rows = response.context["rows"]
    events = AuditEvent.objects.filter(event_type="tool_changed").order_by("-pk")
    assert [row["event"].pk for row in rows] == [e.pk for e in events]
    assert [row["deleted"] for row in rows] == [True, False, False]
    body = response.content.decode()
    assert all(f'href="/audit/{e.pk}/"' in body for e in events)
    assert 'href="/audit/changes/"' in as_compliance.get("/audit/").content.decode()


def test_a_compliance_user_of_another_catalog_is_refused(client, refund_selection):
    create_catalog("elsewhere", "Elsewhere")
    reader = make_user("rita", groups=("compliance",))
    UserCatalogAccess.objects.create(user=reader, catalogs=["elsewhere"])
    client.force_login(reader)
    for url in (
        "/audit/tools/default/refund_payment/v1/",
        "/audit/settings/default/v1/",
        "/audit/changes/?catalog=default",
    ):
        assert client.get(url).status_code == 403, url
    by_selection = f"/audit/{refund_selection.pk}/tools/refund_payment/"
    assert client.get(by_selection).status_code == 404
    log = client.get("/audit/changes/")
    slugs = {row["event"].catalog_slug for row in log.context["rows"]}
    assert slugs == {"elsewhere"}  # its catalog_created event, nothing of default


def test_a_curator_may_not_open_a_version_page(as_curator):
    make_tool(name="refund_payment")
    assert as_curator.get("/audit/tools/default/refund_payment/v1/").status_code == 403


def test_an_unknown_version_says_so_in_words(as_compliance):
    make_tool(name="refund_payment")
    response = as_compliance.get("/audit/tools/default/refund_payment/v99/")
    assert response.status_code == 404
    assert "No record of refund_payment version 99" in response.content.decode()
    settings = as_compliance.get("/audit/settings/default/v7/")
    assert settings.status_code == 404
    assert "No record of settings version 7 of default" in settings.content.decode()
    defaults = as_compliance.get("/audit/settings/default/v0/")
    assert defaults.status_code == 200
    assert "the defaults" in defaults.content.decode()


def test_the_change_log_refuses_a_kind_of_change_it_does_not_know(client, db):
    from django.contrib.auth.models import Group, User

    reader = User.objects.create_user("reader-of-changes", password="x")
    reader.groups.add(Group.objects.get_or_create(name="compliance")[0])
    client.force_login(reader)
    response = client.get("/audit/changes/?what=bogus")
    assert response.status_code == 400
    assert response.content.decode().startswith("what: must be one of")
