"""The curators' console in a real browser: htmx swaps, live checks, job progress."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from catalog.services import ensure_default_catalog
from tests.factories import make_tool, weather_schema

pytestmark = pytest.mark.browser

BAD_SCHEMA = '{"type": "object", "properties": {"city": {"type": "strnig"}}}'


def test_a_curator_logs_in_and_lands_on_the_tool_list(page):
    expect(page.get_by_test_id("username")).to_have_text("carla")
    expect(page.locator("h1")).to_have_text("Tools")
    expect(page.get_by_text("No tools yet.")).to_be_visible()


def test_search_and_filters_update_the_list_in_place_and_push_the_url(page, screenshot):
    make_tool(name="weather_forecast", title="Forecast", tags=["weather"])
    make_tool(name="weather_alerts", safe=False, risk_level="high", category="ops")
    make_tool(name="delete_user", safe=False, risk_level="critical")
    page.goto("/tools/")
    page.evaluate("window.stillTheSamePage = true")
    rows = page.locator("#tool-results .tool-name")
    expect(rows).to_have_count(3)

    page.fill("input[name=q]", "weather")
    expect(rows).to_have_count(2)
    expect(page.get_by_test_id("tool-count")).to_have_text("2 tools")
    page.select_option("select[name=safe]", "false")
    expect(rows).to_have_text(["weather_alerts"])
    expect(page.get_by_test_id("tool-count")).to_have_text("1 tool")

    expect(page).to_have_url(re.compile(r"/tools/\?q=weather&.*safe=false"))
    assert page.evaluate("window.stillTheSamePage") is True
    page.fill("input[name=q]", "")
    page.select_option("select[name=safe]", "")
    expect(rows).to_have_count(3)
    screenshot(page, "tool-list")


def test_a_curator_opens_a_tool_sees_its_schema_and_previews_and_disables_it(
    page, screenshot
):
    make_tool(name="get_weather", description="Current weather for a city.")
    page.goto("/tools/")
    page.get_by_role("link", name="get_weather").click()
    expect(page.locator("h1")).to_have_text("get_weather")
    expect(page.locator("#tool-schema")).to_contain_text('"city"')

    preview = page.locator('pre[data-format="anthropic"]')
    expect(preview).to_be_hidden()
    page.locator("label[for=preview-anthropic]").click()
    expect(preview).to_be_visible()
    expect(preview).to_contain_text('"input_schema"')

    badge = page.locator("#tool-status").get_by_test_id("status-badge")
    expect(badge).to_have_text("Active")
    page.get_by_role("button", name="Disable").click()
    expect(badge).to_have_text("Disabled")
    expect(page.get_by_test_id("tool-version")).to_have_text("2")
    expect(page.locator("#tool-history tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Compare A → B").click()
    expect(page.locator(".diff-line.added")).to_contain_text('"status": "disabled"')
    screenshot(page, "tool-detail")


def test_a_curator_fixes_a_schema_the_live_check_refused_and_saves(page, screenshot):
    ensure_default_catalog()
    page.goto("/tools/new/")
    page.fill("#id_name", "get_weather")
    page.fill("#id_description", "Current weather for a city.")
    schema = page.locator("#id_parameters")
    check = page.get_by_test_id("schema-check")

    schema.fill(BAD_SCHEMA)
    schema.press("End")
    expect(check).to_contain_text("/parameters/properties/city/type")
    screenshot(page, "tool-form")

    schema.fill(json.dumps(weather_schema(), indent=2))
    schema.press("End")
    expect(check).to_have_text("✓ Schema OK")

    page.get_by_role("button", name="Create tool").click()
    expect(page).to_have_url(re.compile(r"/tools/\d+/$"))
    expect(page.locator("h1")).to_have_text("get_weather")
    expect(page.locator("#tool-schema")).to_contain_text('"fahrenheit"')


def test_an_import_shows_its_progress_until_the_counts_are_final(
    celery_worker, page, screenshot
):
    document = [
        {"name": "get_weather", "parameters": weather_schema()},
        {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
        {"name": "broken_tool", "parameters": {"type": "strnig"}},
    ]
    ensure_default_catalog()
    page.goto("/import/")
    page.set_input_files(
        "#id_file",
        files=[
            {
                "name": "tools.json",
                "mimeType": "application/json",
                "buffer": json.dumps(document).encode(),
            }
        ],
    )
    page.get_by_role("button", name="Preview import (dry run)").click()
    page.get_by_test_id("import-confirm").click()
    expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))

    expect(page.get_by_test_id("job-percent")).to_have_text("100%", timeout=20000)
    expect(page.get_by_test_id("job-state")).to_have_text("succeeded")
    expect(page.locator("[data-testid=count-created] dd")).to_have_text("2")
    expect(page.locator("[data-testid=count-rejected] dd")).to_have_text("1")
    expect(page.locator("tr.row-rejected")).to_contain_text("broken_tool")
    progress = page.locator("#job-progress")
    expect(progress).not_to_have_attribute("hx-trigger", "every 1s")
    screenshot(page, "job-page")
