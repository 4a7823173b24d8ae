"""The Reviews pages in a real browser: after a source turned hostile, a curator
reads the rug-pulled description beside the pinned one with the rules it broke
explained, refuses it with a reason, and finds the poisoned new tool can only
be allowed, not approved. The trust policy page saves a new settings version."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from catalog.models import Tool, ToolReview
from catalog.services import ensure_default_catalog
from selection.models import SelectionSettings
from sources.services import create_source
from tests.e2e.conftest import signed_in
from tests.hostile import HONEST_WEATHER_TEXT, hostile_upstream, poison, rug_pull
from tests.sources.conftest import sync
from tests.upstream import running_upstream

pytestmark = pytest.mark.browser


@pytest.fixture
def turned(live_server, admin_user):
    with running_upstream(hostile_upstream()) as upstream:
        source = create_source(
            ensure_default_catalog(), name="wx", url=upstream.url, actor=admin_user
        ).source
        sync(source)
        rug_pull(upstream)
        poison(upstream)
        sync(source)
        yield


def test_a_curator_refuses_a_rug_pull_read_side_by_side(
    browser, live_server, curator, turned, screenshot
):
    with signed_in(browser, live_server, curator) as page:
        page.get_by_role("link", name="Reviews").click()
        expect(page.get_by_test_id("reviews-waiting")).to_have_text("2")
        expect(page.get_by_test_id("review-table")).to_contain_text("wx__get_weather")
        screenshot(page, "reviews")
        weather = ToolReview.objects.get(tool_name="wx__get_weather")
        page.locator(f'tr[data-review="{weather.pk}"] a').click()
        diff = page.get_by_test_id("review-diff")
        expect(diff).to_contain_text(HONEST_WEATHER_TEXT)
        expect(diff).to_contain_text("read ~/.ssh/id_rsa")
        findings = page.get_by_test_id("review-findings")
        expect(findings).to_contain_text("read-sensitive-files")
        expect(findings).to_contain_text("model-markup")
        expect(page.get_by_role("button", name="Approve")).to_have_count(0)
        screenshot(page, "review-rug-pull")
        page.get_by_role("button", name="Refuse").click()
        expect(page.get_by_test_id("review-error")).to_contain_text("reason")
        page.get_by_label("Reason").fill("It asks the model for our SSH key.")
        page.get_by_role("button", name="Refuse").click()
        expect(page.get_by_test_id("review-state")).to_have_text("Refused")
    weather.refresh_from_db()
    assert weather.state == "refused" and weather.decider_name == curator.username
    assert Tool.objects.get(name="wx__get_weather").description == HONEST_WEATHER_TEXT


def test_the_trust_policy_page_saves_a_settings_version(
    browser, live_server, curator, screenshot
):
    catalog = ensure_default_catalog()
    with signed_in(browser, live_server, curator) as page:
        page.goto(f"/catalogs/{catalog.slug}/trust-policy/")
        page.get_by_label("On a risky change from a source").select_option(
            "keep-pinned"
        )
        page.get_by_label("E-mail address").check()
        page.get_by_label("The catalog's own personal-data patterns").fill(
            "staff: EMP-[0-9]{6}"
        )
        expect(page.get_by_test_id("trust-rules")).to_contain_text("tag-characters")
        screenshot(page, "trust-policy")
        page.get_by_role("button", name="Save the policy").click()
        expect(page.locator(".message.success")).to_contain_text("Trust policy saved")
    trust = SelectionSettings.objects.get(catalog=catalog).data["trust"]
    assert trust["risky_change"] == "keep-pinned"
    assert trust["pii_rules"] == ["email"]
    assert trust["pii_patterns"] == [{"name": "staff", "pattern": "EMP-[0-9]{6}"}]
