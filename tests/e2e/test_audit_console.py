"""The compliance console in a real browser: filter, open a selection and a change,
verify the chain, download the CSV; a curator finds no Audit entry and is refused."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from audit.models import AuditEvent
from catalog.services import ensure_default_catalog
from selection.services.settings import update_selection_settings
from tests.e2e.conftest import PASSWORD

pytestmark = pytest.mark.browser


def signed_in(browser, live_server, user, width: int = 1360):
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    context.set_default_timeout(5000)
    tab = context.new_page()
    tab.goto("/login/")
    tab.fill("#id_username", user.get_username())
    tab.fill("#id_password", PASSWORD)
    tab.click("button[type=submit]")
    tab.wait_for_url("**/tools/")
    return context, tab


@pytest.fixture
def auditor_page(browser, live_server, compliance):
    context, tab = signed_in(browser, live_server, compliance)
    try:
        yield tab
    finally:
        context.close()


def test_a_compliance_user_filters_by_tool_and_date_and_opens_a_selection(
    auditor_page, trail, screenshot
):
    page = auditor_page
    page.get_by_role("link", name="Audit").click()
    expect(page.locator("h1")).to_have_text("Audit")
    expect(page.get_by_test_id("audit-line")).to_have_count(AuditEvent.objects.count())
    screenshot(page, "audit-list")
    picked = trail.refund.output["tools"][0]["name"]
    page.get_by_label("Tool offered", exact=True).fill(picked)
    page.wait_for_url(f"**tool={picked}**")
    page.get_by_label("From (day)", exact=True).fill(str(timezone.localdate()))
    page.wait_for_url("**since=**")
    rows = page.get_by_test_id("audit-line")
    # Every selection that offered the tool that day (another may have, too).
    expect(rows.filter(has_text="refund the card payment")).to_have_count(1)
    expect(rows.filter(has_text="zzzz qqqq")).to_have_count(0)
    screenshot(page, "audit-list-filtered")
    tomorrow = timezone.localdate() + timedelta(days=1)
    page.get_by_label("From (day)", exact=True).fill(str(tomorrow))
    expect(page.get_by_text("No events match these filters.")).to_be_visible()
    page.go_back()
    page.get_by_test_id("audit-line").filter(has_text="refund the card").click()
    expect(page.locator("h1")).to_have_text("Selection")
    expect(page.get_by_test_id("pick").first).to_contain_text(picked)
    expect(page.get_by_test_id("exclusion-stage").first).to_be_visible()
    expect(
        page.get_by_text("Tool calls checked against this selection")
    ).to_be_visible()
    screenshot(page, "audit-selection")
    # "Why not get_weather?": answered in place, from the selection's record.
    page.get_by_label("Tool of the catalog").fill("get_weather")
    page.get_by_role("button", name="Explain").click()
    answer = page.get_by_test_id("why-not-answer")
    expect(answer).to_contain_text("get_weather was left out at the policy stage")
    expect(answer).to_contain_text("blocked")
    expect(answer).to_contain_text("From the selection's own record.")
    screenshot(page, "audit-why-not")


def test_a_compliance_user_opens_a_change_and_reads_its_diff(
    auditor_page, compliance, screenshot
):
    update_selection_settings(
        ensure_default_catalog(), {"default_scorer": "bm25f"}, actor=compliance
    )
    page = auditor_page
    page.goto("/audit/?event_type=settings")
    page.get_by_test_id("audit-line").first.click()
    expect(page.get_by_test_id("change-who")).to_have_text("cora")
    expect(page.get_by_test_id("diff").locator(".added").first).to_be_visible()
    expect(page.get_by_test_id("diff")).to_contain_text("bm25f")
    screenshot(page, "audit-change")


def test_a_compliance_user_runs_verify(auditor_page, trail, screenshot):
    page = auditor_page
    page.goto("/audit/")
    page.get_by_role("link", name="Verify the chain").click()
    page.get_by_test_id("run-verify").click()
    result = page.get_by_test_id("verify-ok")
    expect(result).to_contain_text(f"{AuditEvent.objects.count()} records checked")
    screenshot(page, "audit-verify")


def test_a_compliance_user_downloads_the_filtered_csv(auditor_page, trail):
    page = auditor_page
    page.goto("/audit/")
    page.get_by_label("What", exact=True).select_option("selection")
    page.wait_for_url("**event_type=selection**")
    with page.expect_download() as waiting:
        page.get_by_test_id("export-csv").click()
    download = waiting.value
    text = Path(download.path()).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [row["event_type"] for row in rows] == ["selection"] * 3
    assert all(row["seq"] and len(row["hash"]) == 64 for row in rows)


def test_at_800_px_the_list_keeps_when_and_what_happened(
    browser, live_server, compliance, trail, screenshot
):
    context, page = signed_in(browser, live_server, compliance, width=800)
    try:
        page.goto("/audit/")
        expect(page.get_by_role("columnheader", name="What happened")).to_be_visible()
        expect(page.get_by_role("columnheader", name="When")).to_be_visible()
        expect(page.get_by_test_id("audit-line").first).to_be_in_viewport()
        screenshot(page, "audit-list-800px")
    finally:
        context.close()


def test_a_curator_has_no_audit_entry_and_is_refused(page, screenshot):
    expect(page.get_by_role("link", name="Audit")).to_have_count(0)
    response = page.goto("/audit/")
    assert response is not None and response.status == 403
    expect(page.get_by_test_id("error-page")).to_contain_text(
        "You may not open this page"
    )
    screenshot(page, "audit-refused")
