"""The "Try it" page in a real browser: results swap in without a page reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.factories import make_sample_catalog

pytestmark = pytest.mark.browser


@pytest.fixture
def catalog(transactional_db):
    """A small catalog with real embeddings of the bundled model."""
    return make_sample_catalog("get_weather", "send_email", "delete_repository")


def test_a_query_shows_the_pick_and_its_reason_without_a_page_reload(
    page, catalog, screenshot
):
    page.goto("/try/")
    page.evaluate("window.stillTheSamePage = true")
    expect(page.get_by_text("Results appear here.")).to_be_visible()

    page.fill("#id_query", "what's the weather like in Paris today?")
    page.get_by_role("button", name="Select tools").click()

    first = page.get_by_test_id("pick").first
    expect(first.get_by_test_id("pick-name")).to_have_text("get_weather")
    expect(first.get_by_test_id("pick-reason")).not_to_be_empty()
    expect(page.get_by_test_id("stat-considered")).to_have_text("3")
    assert page.evaluate("window.stillTheSamePage") is True
    # What was typed stays in the form.
    expect(page.locator("#id_query")).to_have_value(
        "what's the weather like in Paris today?"
    )

    page.locator('details[data-stage="policy"] summary').click()
    expect(page.locator('details[data-stage="policy"]')).to_contain_text("unsafe")
    screenshot(page, "try-it")

    page.fill("#id_min_score", "0.99")
    page.get_by_role("button", name="Select tools").click()
    expect(page.get_by_test_id("empty-answer")).to_contain_text(
        "No tool applies to this request"
    )
    screenshot(page, "try-it-empty")

    page.fill("#id_min_score", "2")
    page.get_by_role("button", name="Select tools").click()
    expect(page.locator("#errors-min_score")).to_contain_text("min_score:")
    screenshot(page, "try-it-error")
    assert page.evaluate("window.stillTheSamePage") is True

    page.get_by_test_id("settings-link").click()
    expect(page.locator("#id_settings")).to_contain_text('"candidate_pool": 50')
    screenshot(page, "selection-settings")
