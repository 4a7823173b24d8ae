"""Sources in a real browser: an admin opens a catalog's sources, adds an MCP
server with a secret header, tests the connection, syncs it, and sees the last
result and the tools it brought."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.services import claim_job
from sources.models import Source
from sources.sync import run_sync
from tests.e2e.conftest import signed_in
from tests.factories import make_user
from tests.upstream import running_upstream

pytestmark = pytest.mark.browser
SECRET = "Bearer sk-e2e-4b1d9a77"


@pytest.fixture
def admin_page(browser, live_server):
    with signed_in(browser, live_server, make_user("ada", superuser=True)) as tab:
        yield tab


def test_an_admin_adds_tests_and_syncs_a_source(admin_page, screenshot):
    page = admin_page
    with running_upstream() as upstream:
        upstream.required_headers = {"authorization": SECRET}
        page.goto("/catalogs/")
        page.locator('tr[data-catalog="default"]').get_by_role(
            "link", name="Sources"
        ).click()
        expect(page.locator("h1")).to_contain_text("Sources")
        expect(page.get_by_text("No sources yet.")).to_be_visible()
        page.fill("#id_name", "weather")
        page.fill("#id_url", upstream.url)
        page.fill("#id_headers", f"Authorization: {SECRET}")
        page.get_by_role("button", name="Add source").click()
        expect(page.locator("h1")).to_contain_text("weather")
        expect(page.get_by_text("its first sync is queued")).to_be_visible()
        expect(page.locator("#id_headers")).to_have_value("Authorization: ••••••")
        assert "sk-e2e" not in page.content()

        page.get_by_test_id("test-connection").click()
        expect(page.get_by_test_id("test-result")).to_contain_text("Connected")

        page.get_by_test_id("sync-now").click()
        page.wait_for_url("**/jobs/*/")
        source = Source.objects.get(name="weather")
        job = claim_job(source.catalog.jobs.get(kind="sync").pk)
        assert job is not None
        run_sync(job)  # what a worker does with the job
        expect(page.get_by_test_id("job-percent")).to_have_text("100%")

        page.goto(f"/sources/{source.pk}/")
        expect(page.get_by_test_id("source-status")).to_have_text("OK")
        expect(page.get_by_test_id("last-result")).to_contain_text("7 created")
        rows = page.locator("table.source-tools tbody tr")
        expect(rows).to_have_count(7)
        page.get_by_test_id("test-connection").click()
        expect(page.get_by_test_id("test-result")).to_contain_text("Connected")
        screenshot(page, "sources")
        page.get_by_role("link", name="weather__get_forecast").click()
        expect(page.locator("h1")).to_contain_text("weather__get_forecast")
        assert "sk-e2e" not in page.content()


def test_a_curator_sees_no_sources_link(page):
    page.goto("/catalogs/")
    expect(page.get_by_role("link", name="Sources")).to_have_count(0)
