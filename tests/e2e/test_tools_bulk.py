"""The tool list in bulk and the edit preview, in a real browser: sorting, page
size, export, bulk edits on the ticked or the filtered tools with a review that
names the count, a large set's progress, and an edit's reason and diff."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from catalog.models import Tool, ToolChange
from catalog.services import bulk_edit
from tests.factories import make_tool

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def warm_server(live_server):
    """The live server's first page can outlast the browser's 5 s timeout on a
    loaded machine (imports on first use); load it once without a browser."""
    with urllib.request.urlopen(f"{live_server.url}/login/", timeout=60) as answer:
        assert answer.status == 200


def test_a_curator_sorts_the_list_by_clicking_a_header(page):
    for name in ("beta", "alpha", "gamma"):
        make_tool(name=name)
    page.goto("/tools/")
    names = page.locator("#tool-results .tool-name")
    expect(names).to_have_text(["alpha", "beta", "gamma"])
    page.locator("th a[data-sort=name]").click()
    expect(page).to_have_url(re.compile(r"sort=name"))
    page.locator("th a[data-sort=name]").click()
    expect(names).to_have_text(["gamma", "beta", "alpha"])
    expect(page).to_have_url(re.compile(r"sort=-name"))
    # Filtering keeps the chosen sort.
    page.fill("input[name=q]", "a")
    expect(page).to_have_url(re.compile(r"q=a.*sort=-name|sort=-name.*q=a"))
    expect(names).to_have_text(["gamma", "beta", "alpha"])


def test_the_page_size_and_the_export_link_follow_the_filters(page):
    for number in range(30):
        make_tool(name=f"tool_{number:02}", category="ops" if number % 2 else "")
    page.goto("/tools/")
    names = page.locator("#tool-results .tool-name")
    expect(names).to_have_count(25)
    page.select_option("select[name=per_page]", "50")
    expect(names).to_have_count(30)
    page.select_option("select[name=category]", "ops")
    expect(names).to_have_count(15)
    link = page.get_by_test_id("export-csv")
    expect(link).to_have_attribute(
        "href", re.compile(r"^/tools/export/\?.*category=ops")
    )
    with page.expect_download() as download:
        link.click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert text.startswith("id,catalog,name,")
    assert text.count("\n") == 16  # the header and the 15 tools


def test_a_curator_disables_the_ticked_tools_after_a_review_naming_the_count(
    page, screenshot
):
    for name in ("alpha", "beta", "gamma"):
        make_tool(name=name, tags=["old"])
    page.goto("/tools/")
    page.get_by_label("Select alpha").check()
    page.get_by_label("Select gamma").check()
    expect(page.locator("[data-selected-count]")).to_have_text("2")
    page.select_option("#bulk-action", "status:disabled")
    page.get_by_label("Reason").fill("vendor outage")
    screenshot(page, "curator-tools-bulk")
    page.get_by_role("button", name="Review…").click()
    expect(page.get_by_test_id("bulk-count")).to_have_text("2 tools")
    expect(page.locator(".bulk-names li")).to_have_text(["alpha", "gamma"])
    assert Tool.objects.filter(status="disabled").count() == 0
    page.get_by_role("button", name="Set status: disabled: 2 tools").click()
    expect(page.locator(".message.success")).to_contain_text("2 updated")
    disabled = Tool.objects.filter(status="disabled").values_list("name", flat=True)
    assert sorted(disabled) == ["alpha", "gamma"]
    assert ToolChange.objects.filter(reason="vendor outage").count() == 2


def test_a_curator_tags_every_tool_matching_the_filters(page):
    for number in range(4):
        make_tool(name=f"weather_{number}")
    make_tool(name="unrelated")
    page.goto("/tools/")
    page.fill("input[name=q]", "weather")
    expect(page.get_by_test_id("tool-count")).to_have_text("4 tools")
    page.get_by_label("all 4 matching").check()
    page.select_option("#bulk-action", "add_tags")
    page.get_by_label("Tag or category").fill("forecast")
    page.get_by_role("button", name="Review…").click()
    expect(page.get_by_test_id("bulk-count")).to_have_text("4 tools")
    expect(page.get_by_test_id("bulk-confirm")).to_contain_text("matches the filters")
    page.get_by_role("button", name="Add tag: 4 tools").click()
    expect(page).to_have_url(re.compile(r"/tools/\?q=weather$"))
    expect(page.locator("#tool-results .tag", has_text="forecast")).to_have_count(4)
    assert Tool.objects.get(name="unrelated").tags == []


def test_a_large_bulk_edit_shows_its_progress(celery_worker, page, monkeypatch):
    monkeypatch.setattr(bulk_edit, "BULK_INLINE_MAX", 2)
    for number in range(6):
        make_tool(name=f"bulk_{number}")
    page.goto("/tools/")
    page.get_by_label("all 6 matching").check()
    page.select_option("#bulk-action", "status:deprecated")
    page.get_by_role("button", name="Review…").click()
    expect(page.get_by_test_id("bulk-confirm")).to_contain_text("in the background")
    page.get_by_role("button", name="Set status: deprecated: 6 tools").click()
    expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
    expect(page.get_by_role("progressbar")).to_be_visible()
    expect(page.get_by_test_id("job-percent")).to_have_text("100%", timeout=20000)
    expect(page.locator("[data-testid=count-updated] dd")).to_have_text("6")
    assert Tool.objects.filter(status="deprecated").count() == 6


def test_an_edit_shows_its_diff_and_reason_before_save_new_version(page, screenshot):
    make_tool(name="other", allowed_roles=["support", "finance"])
    tool = make_tool(name="get_weather", description="Current weather for a city.")
    page.goto(f"/tools/{tool.pk}/edit/")
    page.fill("#id_description", "Current weather and a 3-day forecast.")
    page.get_by_label("finance").check()
    page.fill("#id_reason", "Support asked for forecasts")
    expect(page.get_by_role("button", name="Save new version")).to_have_count(0)
    page.get_by_role("button", name="Preview changes").click()
    diff = page.get_by_test_id("edit-diff")
    expect(diff.locator(".diff-line.added")).to_contain_text(
        ['"finance"', '"description": "Current weather and a 3-day forecast."']
    )
    expect(page.locator("#tool-preview")).to_contain_text("Support asked for forecasts")
    assert Tool.objects.get(pk=tool.pk).version == 1
    screenshot(page, "curator-tool-edit-preview")
    page.get_by_role("button", name="Save new version").click()
    expect(page.locator(".message.success")).to_contain_text("Saved version 2")
    expect(page.get_by_test_id("change-reason").first).to_have_text(
        "Support asked for forecasts"
    )
    assert Tool.objects.get(pk=tool.pk).allowed_roles == ["finance"]
