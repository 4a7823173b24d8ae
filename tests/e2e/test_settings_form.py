"""A curator's walk through the selection settings in a real browser: the form
refuses a value out of range next to its input, "try with these settings" shows
both answers without saving, a save makes a version, the history shows each
version's diff, and one click restores an earlier one as a new version."""

from __future__ import annotations

import urllib.request

import pytest
from playwright.sync_api import expect

from learning.models import Evaluation, Label
from learning.services.evaluations import run_now
from selection.models import SelectionSettings
from tests.factories import make_sample_catalog

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def warm_server(live_server):
    """The live server's first answer loads the app (seconds on a busy machine);
    take it before the browser's five-second navigation limit starts counting."""
    urllib.request.urlopen(f"{live_server.url}/login/", timeout=120).read()


@pytest.fixture
def catalog(transactional_db):
    """A small catalog with real embeddings of the bundled model."""
    return make_sample_catalog(
        "get_weather", "send_email", "delete_repository", "refund_payment"
    )


def test_a_curator_edits_tries_saves_and_rolls_back_the_settings(
    page, catalog, screenshot
):
    page.goto("/catalogs/default/selection-settings/")
    expect(page.get_by_test_id("settings-version")).to_have_text("0")
    for legend in ("Scorer", "Weights", "Thresholds", "Candidate pool"):
        expect(page.locator("legend", has_text=legend).first).to_be_visible()
    pool = page.locator("#id_candidate_pool")
    expect(pool).to_have_value("50")
    expect(pool).to_have_attribute("max", "1000")
    core = page.locator("#id_core_tools")
    expect(core.locator("option")).to_have_count(4)

    # Try before saving: both answers side by side, nothing saved.
    page.locator("#id_candidate_pool").fill("40")
    page.locator("#id_min_combined_score").fill("0.99")
    page.fill("#id_try_query", "what's the weather like in Paris today?")
    page.get_by_test_id("try-settings").click()
    saved = page.get_by_test_id("saved-answer")
    proposed = page.get_by_test_id("proposed-answer")
    expect(saved.locator('[data-tool="get_weather"]')).to_contain_text("dropped")
    expect(proposed.locator('[data-tool="get_weather"]')).to_have_count(0)
    assert not SelectionSettings.objects.filter(catalog=catalog).exists()
    screenshot(page, "curator-settings")

    # Not that threshold, then; and a value out of range is refused next to its
    # input, nothing saved.
    page.locator("#id_min_combined_score").fill("0")
    pool.fill("0")
    page.get_by_test_id("save-settings").click()
    expect(page.locator("#errors-candidate_pool")).to_contain_text(
        "candidate_pool: must be between 1 and 1000"
    )
    expect(page.get_by_test_id("settings-version")).to_have_text("0")

    # A core tool picked from the catalog's names.
    page.locator("#id_candidate_pool").fill("40")
    page.locator("#id_core_tools").select_option(["send_email"])
    page.fill("#id_reason", "e-mail always on offer")
    page.get_by_test_id("save-settings").click()
    expect(page.get_by_text("Saved selection settings v1.")).to_be_visible()
    expect(page.get_by_test_id("settings-version")).to_have_text("1")
    expect(page.locator("#id_candidate_pool")).to_have_value("40")

    page.locator("#id_candidate_pool").fill("60")
    page.get_by_test_id("save-settings").click()
    expect(page.get_by_test_id("settings-version")).to_have_text("2")

    # The raw JSON stays for power users.
    page.locator('label[for="view-raw"]').click()
    expect(page.locator("#id_settings")).to_be_visible()
    expect(page.locator("#id_settings")).to_contain_text('"candidate_pool": 60')

    # History: every version, who, why and its diff.
    page.get_by_test_id("history-link").click()
    versions = page.get_by_test_id("settings-version")
    expect(versions).to_have_count(2)
    newest, first = versions.nth(0), versions.nth(1)
    expect(newest.get_by_test_id("version-actor")).to_have_text("carla")
    expect(newest.locator('tr[data-field="candidate_pool"]')).to_contain_text("40")
    expect(newest.locator('tr[data-field="candidate_pool"]')).to_contain_text("60")
    expect(first.get_by_test_id("version-reason")).to_contain_text(
        "e-mail always on offer"
    )
    expect(first.locator('tr[data-field="core_tools"]')).to_contain_text("send_email")
    expect(newest.get_by_test_id("restore")).to_have_count(0)
    screenshot(page, "curator-settings-history")

    # One click: a new version equal to v1.
    first.get_by_test_id("restore").click()
    expect(page.get_by_text("Restored version 1 as v3.")).to_be_visible()
    expect(page.get_by_test_id("current-version")).to_have_text("3")
    expect(versions.nth(0).get_by_test_id("version-reason")).to_contain_text(
        "restored version 1"
    )
    row = SelectionSettings.objects.get(catalog=catalog)
    assert row.version == 3
    assert row.data == {"candidate_pool": 40, "core_tools": ["send_email"]}

    page.goto("/catalogs/default/selection-settings/")
    expect(page.locator("#id_candidate_pool")).to_have_value("40")


def test_a_curator_evaluates_proposed_settings_on_the_labelled_requests(page, catalog):
    """With labelled requests, the settings page starts two evaluation runs (the
    saved and the proposed settings) and links to them side by side."""
    Label.objects.create(
        catalog=catalog, query="is it raining in Oslo?", tools=["get_weather"]
    )
    Label.objects.create(
        catalog=catalog, query="refund order 1234", tools=["refund_payment"]
    )
    page.goto("/catalogs/default/selection-settings/")
    page.locator("#id_candidate_pool").fill("3")
    page.get_by_test_id("evaluate-settings").click()
    link = page.get_by_test_id("settings-evaluations-compare")
    expect(link).to_be_visible()
    for run in Evaluation.objects.filter(catalog=catalog).order_by("id"):
        run_now(run)  # what the worker does, here in the test's process
    saved, tried = Evaluation.objects.filter(catalog=catalog).order_by("id")
    assert saved.settings_data is None and tried.settings_data["candidate_pool"] == 3
    link.click()
    compare = page.get_by_test_id("compare")
    expect(compare).to_contain_text(f"#{saved.pk}")
    expect(compare).to_contain_text(f"#{tried.pk}")
    assert not SelectionSettings.objects.filter(catalog=catalog).exists()
