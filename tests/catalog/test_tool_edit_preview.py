"""The tool form: roles picked from those the catalog knows, a change reason, and
the diff shown before "Save new version"."""

from __future__ import annotations

import html
import json

import pytest

from audit.models import AuditEvent
from catalog.models import Tool, ToolChange
from identity.services import create_api_client
from tests.factories import make_tool, weather_schema

pytestmark = pytest.mark.django_db


def edit_form(**overrides):
    data = {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": json.dumps(weather_schema()),
        "safe": "on",
        "risk_level": "low",
        "status": "active",
        "cost_per_call": "0",
        "currency": "USD",
    }
    return {**data, **overrides}


@pytest.fixture
def tool():
    make_tool(name="other", allowed_roles=["support", "finance"])
    return make_tool(name="get_weather", description="Current weather for a city.")


def test_the_first_post_previews_the_diff_and_writes_nothing(as_curator, tool):
    events = AuditEvent.objects.count()
    data = edit_form(description="Weather now.", reason="clearer")
    response = as_curator.post(f"/tools/{tool.pk}/edit/", data)
    page = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert '-  "description": "Current weather for a city.",' in page
    assert '+  "description": "Weather now.",' in page
    assert "Save new version" in page
    tool.refresh_from_db()
    assert (tool.version, tool.description) == (1, "Current weather for a city.")
    assert AuditEvent.objects.count() == events
    assert ToolChange.objects.filter(tool=tool).count() == 1


def test_confirming_the_preview_saves_with_the_reason_in_history_and_audit(
    as_curator, tool
):
    data = edit_form(description="Weather now.", reason="ticket 7")
    token = as_curator.post(f"/tools/{tool.pk}/edit/", data).context["preview_token"]
    response = as_curator.post(f"/tools/{tool.pk}/edit/", {**data, "confirm": token})
    assert response.status_code == 302
    tool.refresh_from_db()
    assert tool.version == 2
    change = ToolChange.objects.filter(tool=tool).order_by("-id").first()
    assert change.reason == "ticket 7"
    event = AuditEvent.objects.filter(event_type="tool_changed").order_by("-id")[0]
    assert event.input["reason"] == "ticket 7"
    history = as_curator.get(f"/tools/{tool.pk}/history/").content.decode()
    assert 'data-testid="change-reason">ticket 7<' in history


def test_a_form_changed_after_its_preview_is_previewed_again(as_curator, tool):
    data = edit_form(description="Weather now.")
    token = as_curator.post(f"/tools/{tool.pk}/edit/", data).context["preview_token"]
    changed = {**data, "description": "Something else.", "confirm": token}
    response = as_curator.post(f"/tools/{tool.pk}/edit/", changed)
    assert response.status_code == 200
    assert "changed since the last preview" in response.content.decode()
    assert Tool.objects.get(pk=tool.pk).version == 1


def test_a_newer_saved_version_makes_the_preview_stale(as_curator, tool):
    data = edit_form(description="Weather now.")
    token = as_curator.post(f"/tools/{tool.pk}/edit/", data).context["preview_token"]
    Tool.objects.filter(pk=tool.pk).update(version=5)
    response = as_curator.post(f"/tools/{tool.pk}/edit/", {**data, "confirm": token})
    assert response.status_code == 200
    assert Tool.objects.get(pk=tool.pk).description == "Current weather for a city."


def test_a_refusal_shows_at_preview_time_not_after_a_confirm(as_curator, tool):
    response = as_curator.post(
        f"/tools/{tool.pk}/edit/", edit_form(name="other", description="x")
    )
    page = html.unescape(response.content.decode())
    assert "The tool was not saved." in page
    assert "already exists" in page
    assert "Save new version" not in page


def test_an_unchanged_form_says_so_in_the_preview(as_curator, tool):
    response = as_curator.post(f"/tools/{tool.pk}/edit/", edit_form())
    assert "No changes: saving makes no new version." in response.content.decode()


def test_roles_are_offered_from_the_catalog_tools_keys_and_groups(as_curator, tool):
    create_api_client("ops-bot", "agent", roles=["oncall"], catalogs="*")
    page = as_curator.get(f"/tools/{tool.pk}/edit/").content.decode()
    for role in ("support", "finance", "oncall"):
        assert f'name="allowed_roles" value="{role}"' in page
    assert 'name="allowed_roles" value="curator"' not in page


def test_a_role_that_is_not_offered_is_refused(as_curator, tool):
    data = edit_form(allowed_roles=["suport"])
    page = as_curator.post(f"/tools/{tool.pk}/edit/", data).content.decode()
    assert "Select a valid choice" in page
    assert "Save new version" not in page


def test_a_new_role_is_an_explicit_choice_and_a_known_one_respelled_is_refused(
    as_curator, tool
):
    data = edit_form(new_roles="Sup_port")
    page = html.unescape(
        as_curator.post(f"/tools/{tool.pk}/edit/", data).content.decode()
    )
    assert "new_roles: 'Sup_port' is the known role 'support'" in page
    data = edit_form(allowed_roles=["finance"], new_roles="billing-ops")
    token = as_curator.post(f"/tools/{tool.pk}/edit/", data).context["preview_token"]
    as_curator.post(f"/tools/{tool.pk}/edit/", {**data, "confirm": token})
    assert Tool.objects.get(pk=tool.pk).allowed_roles == ["finance", "billing-ops"]


def test_a_reason_past_500_characters_is_an_error_on_the_field(as_curator, tool):
    data = edit_form(description="x", reason="r" * 501)
    page = as_curator.post(f"/tools/{tool.pk}/edit/", data).content.decode()
    assert 'data-field="reason"' in page
    assert "at most 500 characters" in page
    assert Tool.objects.get(pk=tool.pk).version == 1


def test_create_keeps_its_reason(as_curator):
    data = {**edit_form(name="new_tool"), "catalog": "default", "reason": "pilot"}
    response = as_curator.post("/tools/new/", data)
    assert response.status_code == 302
    assert ToolChange.objects.get(tool_name="new_tool").reason == "pilot"
