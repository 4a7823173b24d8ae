"""make run's tour in a real browser, on a stack set up like its demo: a
first-time admin lands on the tool list with the first steps (and, until the
demo catalog is embedded, the notice that selections are ranked by words alone),
tries the headline request (``send_email`` first), sees that step ticked, and
dismisses the panel. The README's screenshot is taken here."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from calls.upstream import pool
from tests.demo import add_demo_source, embed_demo, load_demo_catalog, sync_demo_source
from tests.e2e.conftest import signed_in

pytestmark = pytest.mark.browser
HEADLINE = "email the quarterly report to Dana"


@pytest.fixture
def demo(transactional_db, tmp_path, settings, monkeypatch):
    catalog = load_demo_catalog(tmp_path, monkeypatch)
    add_demo_source(tmp_path, settings)
    sync_demo_source()
    yield catalog
    work = pool()
    work.submit(work.close_all(), 10)  # stop the pooled demo server processes


def step(page, key):
    return page.locator(f'[data-testid="first-step"][data-step="{key}"]')


def test_a_first_time_admin_is_shown_the_first_steps_and_tries_a_selection(
    browser, live_server, demo, screenshot
):
    admin = get_user_model().objects.get(username="admin")
    with signed_in(browser, live_server, admin) as page:
        expect(page.get_by_test_id("first-steps")).to_be_visible()
        for key in ("select", "agent", "source"):
            expect(step(page, key)).to_have_attribute("data-done", "no")
        expect(page.get_by_test_id("words-only-notice")).to_contain_text(
            "ranked by words alone"
        )
        screenshot(page, "first-steps")

        embed_demo(demo)
        step(page, "select").get_by_role("link").click()
        page.fill("#id_query", "what's the weather in Paris?")  # warms the caches
        page.get_by_role("button", name="Select tools").click()
        expect(page.get_by_test_id("pick").first).to_be_visible()
        warm = page.locator(".result-head code").nth(1).inner_text()
        page.fill("#id_query", HEADLINE)
        page.get_by_role("button", name="Select tools").click()
        expect(page.locator(".result-head code").nth(1)).not_to_have_text(warm)
        expect(page.get_by_test_id("stat-cached")).to_have_text("no")
        expect(page.get_by_test_id("pick")).to_have_count(3)
        expect(page.get_by_test_id("pick").first).to_have_attribute(
            "data-tool", "send_email"
        )
        expect(page.get_by_test_id("words-only")).to_have_count(0)
        screenshot(page, "tour-try-it")

        page.get_by_role("link", name="Tools").first.click()
        expect(step(page, "select")).to_have_attribute("data-done", "yes")
        expect(page.get_by_test_id("words-only-notice")).to_have_count(0)
        page.get_by_test_id("first-steps-dismiss").click()
        expect(page.get_by_test_id("first-steps")).to_have_count(0)
        page.reload()
        expect(page.get_by_test_id("first-steps")).to_have_count(0)
