"""The compliance console in a real browser, following what a selection depended on:
a picked tool's version page (after the tool was edited and deleted), the settings
version's change, a tool change's field-by-field diff, and the change log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from catalog.models import Tool
from catalog.services import delete_tool, update_tool
from catalog.services.tools import tool_to_spec
from selection.services.settings import update_selection_settings
from tests.audit_trail import make_audit_trail
from tests.e2e.conftest import signed_in
from tests.factories import ensure_default_catalog

pytestmark = pytest.mark.browser


@pytest.fixture
def auditor(browser: Any, live_server: Any, compliance: Any) -> Iterator[Page]:
    with signed_in(browser, live_server, compliance) as tab:
        yield tab


def _edit_then_delete(name: str) -> None:
    tool = Tool.objects.get(name=name)
    spec = tool_to_spec(tool)
    spec.parameters = {"type": "object", "properties": {"reason": {"type": "string"}}}
    spec.description = "Edited after the selection."
    result = update_tool(tool, spec, actor=None)
    assert result.tool is not None
    delete_tool(result.tool, actor=None)


def test_a_compliance_user_follows_a_picked_tool_to_the_version_it_had(
    auditor, api, compliance, screenshot
):
    update_selection_settings(
        ensure_default_catalog(), {"default_scorer": "bm25f"}, actor=compliance
    )
    trail = make_audit_trail(api)
    picked = trail.refund.output["tools"][0]
    _edit_then_delete(picked["name"])
    page = auditor
    page.goto(f"/audit/{trail.refund.pk}/")
    page.get_by_test_id("pick-version-link").first.click()
    expect(page.get_by_test_id("tool-version-title")).to_contain_text(
        f"{picked['name']} version {picked['version']}"
    )
    expect(page.get_by_test_id("tool-deleted")).to_be_visible()
    expect(page.get_by_test_id("hash-match")).to_be_visible()
    expect(page.get_by_test_id("tool-schema")).to_contain_text('"city"')
    expect(page.get_by_test_id("tool-schema")).not_to_contain_text('"reason"')
    screenshot(page, "audit-tool-version")
    page.go_back()
    page.get_by_test_id("settings-version-link").click()
    expect(page.get_by_test_id("change-who")).to_have_text("cora")
    row = page.get_by_test_id("field-changes").locator("tr[data-field=default_scorer]")
    expect(row.locator(".new")).to_have_text("bm25f")
    screenshot(page, "audit-settings-diff")


def test_a_compliance_user_opens_a_tool_change_from_the_change_log(
    auditor, api, screenshot
):
    trail = make_audit_trail(api)
    _edit_then_delete(trail.refund.output["tools"][0]["name"])
    page = auditor
    page.goto("/audit/")
    page.get_by_role("link", name="Changes", exact=True).click()
    expect(page.get_by_test_id("change-log")).to_contain_text("deleted")
    screenshot(page, "audit-changes")
    page.get_by_test_id("change-line").filter(has_text=": update").first.click()
    fields = page.get_by_test_id("field-changes")
    expect(fields.locator("tr[data-field=description] .new")).to_have_text(
        "Edited after the selection."
    )
    expect(fields.locator("tr[data-field=parameters]")).to_contain_text(
        "properties › reason: added"
    )
    expect(page.get_by_test_id("diff").locator(".removed").first).to_be_visible()
    screenshot(page, "audit-change-tool")
    page.get_by_test_id("change-version-link").filter(has_text="(before)").click()
    expect(page.get_by_test_id("tool-schema")).to_contain_text('"city"')


def test_at_800_px_a_change_keeps_its_field_table_readable(
    browser, live_server, compliance, api, screenshot
):
    trail = make_audit_trail(api)
    _edit_then_delete(trail.refund.output["tools"][0]["name"])
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 800, "height": 900}
    )
    context.set_default_timeout(5000)
    try:
        page = context.new_page()
        page.goto("/login/")
        page.fill("#id_username", compliance.get_username())
        page.fill("#id_password", "pw-12345678")
        page.click("button[type=submit]")
        page.wait_for_url("**/tools/")
        page.goto("/audit/changes/?what=tool_changed")
        page.get_by_test_id("change-line").filter(has_text=": update").first.click()
        header = page.get_by_role("columnheader", name="After")
        expect(header).to_be_in_viewport()
        screenshot(page, "audit-change-800px")
    finally:
        context.close()
