"""The compliance dashboard in a real browser: a compliance user opens it from the
navigation, reads the charts and their numbers, switches the range (the URL keeps
it), follows a tool to the audit list; at 800 px nothing spills sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import signed_in

pytestmark = pytest.mark.browser


def test_a_compliance_user_reads_the_dashboard_and_follows_a_tool(
    browser, live_server, compliance, trail, screenshot
):
    picked = trail.refund.output["tools"][0]["name"]
    with signed_in(browser, live_server, compliance) as page:
        page.get_by_role("link", name="Dashboard", exact=True).click()
        expect(page.locator("h1")).to_have_text("Dashboard")
        expect(page.get_by_test_id("stat-selections")).to_have_text("3")
        expect(page.get_by_test_id("stat-no-tools")).to_have_text("1")
        expect(page.get_by_role("img", name="Selections per day")).to_be_visible()
        expect(page.get_by_test_id("top-picked")).to_contain_text(picked)
        expect(page.get_by_test_id("calls-invalid")).to_have_text("1")
        screenshot(page, "audit-dashboard")
        page.get_by_role("link", name="Last 24 hours").click()
        page.wait_for_url("**range=24h**")
        expect(page.get_by_role("img", name="Selections per hour")).to_be_visible()
        expect(page.get_by_role("link", name="Last 24 hours")).to_have_attribute(
            "aria-current", "true"
        )
        page.get_by_test_id("picked-link").filter(has_text=picked).click()
        expect(page.locator("h1")).to_have_text("Audit")
        expect(page.get_by_label("Tool offered", exact=True)).to_have_value(picked)
        lines = page.get_by_test_id("audit-line")
        expect(lines.filter(has_text="refund the card payment")).to_have_count(1)


def test_a_bad_range_is_said_in_the_page(browser, live_server, compliance):
    with signed_in(browser, live_server, compliance) as page:
        page.goto("/audit/dashboard/")
        page.get_by_label("From (day)").fill("2026-11-10")
        page.get_by_label("To (day)").fill("2026-11-01")
        page.get_by_role("button", name="Show").click()
        expect(page.get_by_test_id("dashboard-errors")).to_contain_text(
            "The last day must not be before the first."
        )


def test_at_800_px_the_dashboard_fits_the_width(
    browser, live_server, compliance, trail, screenshot
):
    with signed_in(browser, live_server, compliance) as page:
        page.set_viewport_size({"width": 800, "height": 900})
        page.goto("/audit/dashboard/")
        chart = page.get_by_role("img", name="Selections per day")
        chart.scroll_into_view_if_needed()
        expect(chart).to_be_in_viewport()
        box = chart.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 800
        assert page.evaluate("document.documentElement.scrollWidth") <= 800
        screenshot(page, "audit-dashboard-800px")
