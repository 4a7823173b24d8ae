"""POST /api/v1/tools/bulk: one change on the selected or the filtered tools."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from catalog.models import Tool, ToolChange
from catalog.services import bulk_edit as bulk
from catalog.services import create_catalog
from identity.models import ApiClient
from jobs.choices import JobKind, JobState
from jobs.models import Job
from jobs.services import claim_job
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

URL = "/api/v1/tools/bulk"


@pytest.fixture
def two_catalogs():
    """A catalog the curator's key manages (mine) and one it cannot see (theirs)."""
    mine = create_catalog("mine", "Mine", actor=None)
    theirs = create_catalog("theirs", "Theirs", actor=None)
    for n in range(3):
        make_tool(mine, f"mine_{n}", category="ops", tags=["old"])
        make_tool(theirs, f"theirs_{n}", category="ops", tags=["old"])
    return mine, theirs


def tool_changed_events() -> int:
    return AuditEvent.objects.filter(event_type="tool_changed").count()


def test_bulk_on_ids_changes_each_tool_with_one_change_and_one_event_each(with_key):
    tools = [make_tool(name=f"t_{n}") for n in range(3)]
    events, changes = tool_changed_events(), ToolChange.objects.count()
    body = {
        "ids": [t.pk for t in tools[:2]],
        "set": {"status": "disabled"},
        "reason": "vendor outage",
    }
    response = with_key("curator").post(URL, body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["counts"]["updated"] == 2
    assert response.json()["total"] == 2
    statuses = dict(Tool.objects.values_list("name", "status"))
    assert statuses == {"t_0": "disabled", "t_1": "disabled", "t_2": "active"}
    assert tool_changed_events() == events + 2
    assert ToolChange.objects.count() == changes + 2
    latest = ToolChange.objects.order_by("-id")[:2]
    assert {c.reason for c in latest} == {"vendor outage"}
    event = AuditEvent.objects.filter(event_type="tool_changed").order_by("-id")[0]
    assert event.input["reason"] == "vendor outage"


def test_bulk_by_filter_never_touches_tools_of_catalogs_the_caller_cannot_manage(
    with_key, two_catalogs
):
    client = with_key("curator", catalogs=["mine"])
    body = {"filter": {"category": "ops"}, "set": {"add_tags": ["new"]}}
    response = client.post(URL, body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["total"] == 3
    for tool in Tool.objects.filter(catalog__slug="mine"):
        assert tool.tags == ["old", "new"]
    for tool in Tool.objects.filter(catalog__slug="theirs"):
        assert tool.tags == ["old"]
        assert tool.version == 1


def test_a_filter_naming_a_hidden_catalog_changes_nothing(with_key, two_catalogs):
    client = with_key("curator", catalogs=["mine"])
    body = {"filter": {"catalog": "theirs"}, "delete": True}
    response = client.post(URL, body, format="json")
    assert response.status_code == 200
    assert response.json()["total"] == 0
    assert Tool.objects.filter(catalog__slug="theirs").count() == 3


def test_ids_of_hidden_tools_are_counted_as_not_found_and_left_alone(
    with_key, two_catalogs
):
    theirs = list(
        Tool.objects.filter(catalog__slug="theirs").values_list("pk", flat=True)
    )
    mine = Tool.objects.filter(catalog__slug="mine").first()
    client = with_key("curator", catalogs=["mine"])
    body = {"ids": [*theirs, mine.pk], "delete": True, "reason": "cleanup"}
    response = client.post(URL, body, format="json")
    assert response.status_code == 200
    assert response.json()["counts"]["deleted"] == 1
    assert response.json()["not_found"] == 3
    assert Tool.objects.filter(pk__in=theirs).count() == 3
    assert not Tool.objects.filter(pk=mine.pk).exists()
    assert ToolChange.objects.get(tool_name=mine.name, action="delete").reason == (
        "cleanup"
    )


@pytest.mark.parametrize("scope", ["agent", "compliance"])
def test_agents_and_compliance_may_not_bulk_edit(with_key, scope):
    tool = make_tool(name="kept")
    body = {"ids": [tool.pk], "delete": True}
    response = with_key(scope).post(URL, body, format="json")
    assert response.status_code == 403
    assert Tool.objects.filter(pk=tool.pk).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"set": {"status": "disabled"}}, "ids"),
        ({"ids": [1], "filter": {}, "delete": True}, "ids"),
        ({"ids": [], "delete": True}, "ids"),
        ({"ids": ["x"], "delete": True}, "ids"),
        ({"ids": [1]}, "set"),
        ({"ids": [1], "set": {"status": "gone"}}, "set.status"),
        ({"ids": [1], "set": {"colour": "red"}}, "set.colour"),
        ({"ids": [1], "set": {}}, "set"),
        ({"ids": [1], "set": {"tags": "a"}}, "set.tags"),
        ({"ids": [1], "set": {"tags": ["a"], "add_tags": ["b"]}}, "set.tags"),
        ({"ids": [1], "set": {"category": "x" * 101}}, "set.category"),
        ({"ids": [1], "set": {"allowed_roles": ["a\u202eb"]}}, "set.allowed_roles"),
        ({"ids": [1], "set": {"status": "active"}, "delete": True}, "set"),
        ({"ids": [1], "delete": "yes"}, "delete"),
        ({"ids": [1], "delete": True, "reason": "r" * 501}, "reason"),
        ({"filter": {"status": "gone"}, "delete": True}, "filter"),
        ({"filter": {"colour": "red"}, "delete": True}, "filter"),
        ({"ids": [1], "delete": True, "extra": 1}, "extra"),
        ({"filter": "everything", "delete": True}, "filter"),
        ({"ids": list(range(1, 5002)), "delete": True}, "ids"),
        ({"ids": [1], "set": {"tags": ["x"] * 101}}, "set.tags"),
        ([1, 2], "non_field_errors"),
    ],
)
def test_bad_bulk_bodies_are_a_400_naming_the_field(with_key, body, field):
    tool = make_tool(name="kept")
    response = with_key("curator").post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["fields"], response.json()
    assert Tool.objects.get(pk=tool.pk).version == 1


def test_a_set_larger_than_the_cap_is_refused_naming_the_filter(with_key, monkeypatch):
    monkeypatch.setattr(bulk, "BULK_MAX_TOOLS", 2)
    for n in range(3):
        make_tool(name=f"t_{n}")
    body = {"filter": {}, "set": {"status": "disabled"}}
    response = with_key("curator").post(URL, body, format="json")
    assert response.status_code == 400
    assert "filter" in response.json()["fields"]
    assert not Tool.objects.filter(status="disabled").exists()


def test_a_large_set_is_a_job_per_catalog_that_a_worker_applies(
    with_key, two_catalogs, monkeypatch
):
    monkeypatch.setattr(bulk, "BULK_INLINE_MAX", 2)
    body = {"filter": {"category": "ops"}, "set": {"category": "infra"}, "reason": "r"}
    response = with_key("curator").post(URL, body, format="json")
    assert response.status_code == 202, response.json()
    answer = response.json()
    assert answer["total"] == 6
    assert {j["catalog"] for j in answer["jobs"]} == {"mine", "theirs"}
    assert answer["job"] == answer["jobs"][0]["id"]
    assert not Tool.objects.filter(category="infra").exists()
    for job in Job.objects.filter(kind=JobKind.BULK):
        claimed = claim_job(job.pk)
        assert claimed is not None
        bulk.run_bulk_job(claimed)
    assert Tool.objects.filter(category="infra").count() == 6
    assert set(Job.objects.values_list("state", flat=True)) == {JobState.SUCCEEDED}
    assert ToolChange.objects.filter(reason="r").count() == 6


def test_a_job_skips_tools_its_creator_no_longer_manages(with_key, monkeypatch):
    monkeypatch.setattr(bulk, "BULK_INLINE_MAX", 1)
    tools = [make_tool(name=f"t_{n}") for n in range(3)]
    client = with_key("curator", name="bulk-curator")
    body = {"ids": [t.pk for t in tools], "delete": True}
    assert client.post(URL, body, format="json").status_code == 202
    # Before the worker runs, the key is narrowed to another catalog.
    create_catalog("elsewhere", "Elsewhere", actor=None)
    ApiClient.objects.filter(name="bulk-curator").update(
        catalogs=["elsewhere"], all_catalogs=False
    )
    job = claim_job(Job.objects.get(kind=JobKind.BULK).pk)
    assert job is not None
    done = bulk.run_bulk_job(job)
    assert done.counts["skipped"] == 3
    assert done.counts["deleted"] == 0
    assert Tool.objects.filter(pk__in=[t.pk for t in tools]).count() == 3


def test_a_status_change_works_even_on_a_tool_whose_schema_the_policy_now_refuses(
    with_key,
):
    tool = make_tool(name="legacy")
    Tool.objects.filter(pk=tool.pk).update(parameters={"type": "strnig"})
    client = with_key("curator")
    body = {"ids": [tool.pk], "set": {"status": "disabled"}}
    response = client.post(URL, body, format="json")
    assert response.json()["counts"]["updated"] == 1
    body = {"ids": [tool.pk], "set": {"tags": ["x"]}}
    response = client.post(URL, body, format="json")
    assert response.json()["counts"]["rejected"] == 1
    assert response.json()["rejected"][0]["name"] == "legacy"


def test_setting_the_same_values_again_changes_nothing(with_key):
    tool = make_tool(name="same", tags=["a"])
    body = {"ids": [tool.pk], "set": {"add_tags": ["a"], "remove_tags": ["zz"]}}
    response = with_key("curator").post(URL, body, format="json")
    assert response.json()["counts"]["unchanged"] == 1
    assert Tool.objects.get(pk=tool.pk).version == 1
