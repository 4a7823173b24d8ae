"""The console's tool list: sorting, page size, CSV export and bulk edits."""

from __future__ import annotations

import csv
import io
import re

import pytest

from audit.models import AuditEvent
from catalog.models import Tool, ToolChange
from catalog.services import bulk_edit, create_catalog
from identity.models import UserCatalogAccess
from jobs.choices import JobKind
from jobs.models import Job
from tests.factories import make_tool

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


def listed(page: str) -> list[str]:
    return re.findall(r'class="tool-name" href="[^"]+">([^<]+)</a>', page)


def test_the_list_sorts_by_a_column_and_the_header_offers_the_reverse(as_member):
    for name in ("beta", "alpha", "gamma"):
        make_tool(name=name)
    page = as_member.get("/tools/?sort=-name", headers=HTMX).content.decode()
    assert listed(page) == ["gamma", "beta", "alpha"]
    assert 'aria-sort="descending"' in page
    assert 'href="/tools/?sort=name"' in page
    # The sort is kept in the filter form (out of band), so filtering keeps it.
    assert 'id="id_sort" value="-name" hx-swap-oob="true"' in page


def test_an_unknown_sort_in_a_hand_edited_url_falls_back_to_the_default(as_member):
    make_tool(name="b_tool")
    make_tool(name="a_tool")
    page = as_member.get("/tools/?sort=password", headers=HTMX).content.decode()
    assert listed(page) == ["a_tool", "b_tool"]


def test_the_page_size_is_a_choice(as_member):
    for number in range(30):
        make_tool(name=f"tool_{number:02}")
    page = as_member.get("/tools/?per_page=50", headers=HTMX).content.decode()
    assert len(listed(page)) == 30
    page = as_member.get("/tools/", headers=HTMX).content.decode()
    assert len(listed(page)) == 25
    page = as_member.get("/tools/?per_page=9999", headers=HTMX).content.decode()
    assert len(listed(page)) == 25


def test_the_export_link_carries_the_filters_and_the_file_is_formula_safe(as_member):
    make_tool(name="w1", category="weather", title="=cmd|' /C calc'!A0")
    make_tool(name="other", category="ops")
    page = as_member.get("/tools/?category=weather&page=1").content.decode()
    assert 'href="/tools/export/?category=weather"' in page
    response = as_member.get("/tools/export/?category=weather")
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [row["name"] for row in rows] == ["w1"]
    assert rows[0]["title"] == "'=cmd|' /C calc'!A0"


def test_a_member_sees_no_bulk_bar_and_may_not_post_one(as_member):
    tool = make_tool(name="kept")
    page = as_member.get("/tools/").content.decode()
    assert 'id="tool-bulk"' not in page
    body = {"scope": "selected", "ids": [tool.pk], "action": "delete", "confirm": 1}
    assert as_member.post("/tools/bulk/", body).status_code == 403
    assert Tool.objects.filter(pk=tool.pk).exists()


def test_the_first_post_reviews_the_count_and_changes_nothing(as_curator):
    tools = [make_tool(name=f"t_{n}") for n in range(3)]
    body = {
        "scope": "selected",
        "ids": [t.pk for t in tools[:2]],
        "action": "status:disabled",
        "reason": "outage",
    }
    response = as_curator.post("/tools/bulk/", body)
    page = response.content.decode()
    assert response.status_code == 200
    assert 'data-testid="bulk-count">2 tools<' in page
    assert "Set status: disabled: 2 tools" in page
    assert not Tool.objects.filter(status="disabled").exists()


def test_confirming_the_count_changes_each_tool_with_its_reason(as_curator):
    tools = [make_tool(name=f"t_{n}") for n in range(3)]
    events = AuditEvent.objects.filter(event_type="tool_changed").count()
    body = {
        "scope": "selected",
        "ids": [t.pk for t in tools[:2]],
        "action": "add_tags",
        "value": "legacy",
        "reason": "migration",
        "confirm": 2,
        "filter_query": "q=t_",
    }
    response = as_curator.post("/tools/bulk/", body)
    assert response.status_code == 302
    assert response["Location"] == "/tools/?q=t_"
    tagged = Tool.objects.filter(tags__contains=["legacy"])
    assert sorted(tagged.values_list("name", flat=True)) == ["t_0", "t_1"]
    assert ToolChange.objects.filter(reason="migration").count() == 2
    assert AuditEvent.objects.filter(event_type="tool_changed").count() == events + 2


def test_a_count_that_moved_since_the_review_is_reviewed_again(as_curator):
    make_tool(name="a_1", category="ops")
    make_tool(name="a_2", category="ops")
    body = {
        "scope": "filtered",
        "filter_query": "category=ops",
        "action": "delete",
        "confirm": 1,  # the curator saw one tool; two match now
    }
    page = as_curator.post("/tools/bulk/", body).content.decode()
    assert 'data-testid="bulk-count">2 tools<' in page
    assert Tool.objects.count() == 2


def test_bulk_on_the_filtered_set_never_reaches_catalogs_the_curator_cannot_see(
    as_curator, curator
):
    mine = create_catalog("mine", "Mine", actor=None)
    theirs = create_catalog("theirs", "Theirs", actor=None)
    make_tool(mine, "mine_tool", category="ops")
    make_tool(theirs, "their_tool", category="ops")
    UserCatalogAccess.objects.create(user=curator, catalogs=["mine"])
    body = {
        "scope": "filtered",
        "filter_query": "category=ops",
        "action": "delete",
        "confirm": 1,
    }
    assert as_curator.post("/tools/bulk/", body).status_code == 302
    assert list(Tool.objects.values_list("name", flat=True)) == ["their_tool"]
    body["filter_query"] = "catalog=theirs"
    response = as_curator.post("/tools/bulk/", body)
    assert response.status_code == 400
    assert Tool.objects.filter(name="their_tool").exists()


def test_a_filter_the_list_would_ignore_is_refused_not_widened(as_curator):
    make_tool(name="a_1", status="active")
    make_tool(name="a_2", status="disabled")
    body = {
        "scope": "filtered",
        "filter_query": "status=gone",
        "action": "delete",
        "confirm": 2,
    }
    response = as_curator.post("/tools/bulk/", body)
    assert response.status_code == 400
    assert "filter: not a filter of the list (status)" in response.content.decode()
    assert Tool.objects.count() == 2


def test_a_role_the_catalog_does_not_know_is_refused(as_curator):
    tool = make_tool(name="t", allowed_roles=["support"])
    body = {
        "scope": "selected",
        "ids": [tool.pk],
        "action": "add_allowed_roles",
        "role": "suport",
        "confirm": 1,
    }
    assert as_curator.post("/tools/bulk/", body).status_code == 400
    body["role"] = "support"
    body["action"] = "remove_allowed_roles"
    assert as_curator.post("/tools/bulk/", body).status_code == 302
    assert Tool.objects.get(pk=tool.pk).allowed_roles == []


def test_a_large_set_goes_to_its_job_page(as_curator, monkeypatch):
    monkeypatch.setattr(bulk_edit, "BULK_INLINE_MAX", 1)
    for n in range(3):
        make_tool(name=f"t_{n}")
    body = {
        "scope": "filtered",
        "filter_query": "",
        "action": "status:deprecated",
        "confirm": 3,
    }
    review = as_curator.post("/tools/bulk/", {**body, "confirm": ""})
    assert "run in the background" in review.content.decode()
    response = as_curator.post("/tools/bulk/", body)
    job = Job.objects.get(kind=JobKind.BULK)
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert job.total == 3
    page = as_curator.get(f"/jobs/{job.pk}/").content.decode()
    assert 'role="progressbar"' in page
    assert "set status" in page
