"""Every change that alters what an agent may see is an audit event in the same
chain and the same transaction; a deleted tool's history stays readable."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import transaction

from audit.models import AuditEvent
from catalog.models import Tool, ToolChange
from catalog.services import delete_tool, set_tool_status, update_tool
from tests.factories import make_spec, make_tool, make_user

pytestmark = pytest.mark.django_db


def kinds() -> list[str]:
    return list(AuditEvent.objects.order_by("id").values_list("event_type", flat=True))


def test_creating_changing_disabling_and_deleting_a_tool_are_audit_events(db):
    tool = make_tool(name="get_weather")
    update_tool(tool, make_spec("get_weather", description="New words."), actor=None)
    set_tool_status(Tool.objects.get(pk=tool.pk), "disabled", actor=None)
    delete_tool(Tool.objects.get(pk=tool.pk), actor=None)
    events = AuditEvent.objects.filter(event_type="tool_changed").order_by("id")
    assert [e.input["action"] for e in events] == [
        "create",
        "update",
        "update",
        "delete",
    ]
    assert events.last().output["after"] is None
    assert events.first().catalog_slug == "default"


def test_a_tool_change_and_its_audit_row_commit_or_roll_back_together(db):
    with pytest.raises(RuntimeError), transaction.atomic():
        make_tool(name="doomed")
        raise RuntimeError("the caller's transaction fails after the change")
    assert not Tool.objects.filter(name="doomed").exists()
    assert not AuditEvent.objects.filter(event_type="tool_changed").exists()


def test_a_deleted_tools_history_stays_readable_over_the_api(with_key, db):
    tool = make_tool(name="old_tool")
    delete_tool(tool, actor=None)
    curator = with_key("curator")
    rows = curator.get("/api/v1/catalogs/default/changes?tool=old_tool").json()
    assert [r["action"] for r in rows["results"]] == ["delete", "create"]
    agent = with_key("agent", name="agent")
    response = agent.get("/api/v1/catalogs/default/changes")
    assert response.status_code == 403


def test_a_deleted_tools_history_stays_readable_in_the_console(as_curator, db):
    tool = make_tool(name="old_tool")
    delete_tool(tool, actor=None)
    page = as_curator.get("/catalogs/default/changes/?tool=old_tool").content.decode()
    assert "old_tool" in page and "deleted" in page
    change = ToolChange.objects.filter(tool_name="old_tool", action="delete").get()
    detail = as_curator.get(f"/catalogs/default/changes/{change.pk}/")
    assert detail.status_code == 200
    assert "old_tool" in detail.content.decode()


def test_changing_a_persons_groups_in_the_admin_is_an_audit_event(client, db):
    root = make_user("root", superuser=True)
    person = make_user("pat")
    Group.objects.get_or_create(name="curator")
    client.force_login(root)
    response = client.post(
        f"/admin/auth/user/{person.pk}/change/",
        {
            "username": "pat",
            "is_active": "on",
            "groups": [Group.objects.get(name="curator").pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2026-01-01",
            "initial-date_joined_1": "00:00:00",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    event = AuditEvent.objects.get(
        event_type="access_changed", input__user_id=person.pk, input__via="admin"
    )
    assert event.input["before"]["groups"] == []
    assert event.output["after"]["groups"] == ["curator"]
    assert event.actor_name == "root"


def test_the_change_logs_next_page_keeps_the_tool_filter(as_curator, db):
    for number in range(26):
        make_tool(name=f"tool_{number:02}")
    page = as_curator.get("/catalogs/default/changes/?tool=").content.decode()
    assert 'href="?tool=&amp;page=2"' in page or 'href="?page=2&amp;tool="' in page
