"""Issue 24's points 4-6 in a real browser: an import's dry run then one click,
keys edited, searched and paged, and the small things seen on the walk (copy as
curl / Python, wrapping previews and names, the last Verify, navigation kept on
error pages and the API docs, a sign-in page for everyone)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import FilePayload, Page, expect

from catalog.formats import FORMATS
from catalog.models import Tool, ToolChange
from catalog.services import ensure_default_catalog
from identity.models import ApiClient
from jobs.models import Job
from tests.e2e.conftest import signed_in
from tests.factories import make_client_key, make_tool, make_user, weather_schema

pytestmark = pytest.mark.browser

LONG_NAME = "billing.invoice_export-for_the_quarterly_finance_report_as_pdf_file"


def upload(page: Page, document: Any) -> None:
    payload: FilePayload = {
        "name": "tools.json",
        "mimeType": "application/json",
        "buffer": json.dumps(document).encode(),
    }
    page.set_input_files("#id_file", files=[payload])


# 4. Imports with a dry run ----------------------------------------------------------


def test_an_import_is_previewed_without_a_write_then_imported_in_one_click(
    celery_worker, page, screenshot
):
    ensure_default_catalog()
    make_tool(name="get_time", description="The time.")
    make_tool(name="send_email", description="Send an email.")
    same = {"description": "Send an email.", "parameters": weather_schema()}
    document = [
        {"name": "get_weather", "parameters": weather_schema()},
        {
            "name": "get_time",
            "description": "Time now.",
            "parameters": weather_schema(),
        },
        {"name": "send_email", **same},
        {"name": "broken_tool", "parameters": {"type": "strnig"}},
    ]
    changes = ToolChange.objects.count()
    page.goto("/import/")
    upload(page, document)
    page.get_by_role("button", name="Preview import (dry run)").click()

    report = page.get_by_test_id("import-report")
    expect(report).to_contain_text("nothing has been written yet")
    expected = (("created", 1), ("updated", 1), ("unchanged", 1), ("rejected", 1))
    for outcome, count in expected:
        expect(page.locator(f"[data-testid=preview-{outcome}] dd")).to_have_text(
            str(count)
        )
    expect(report.locator('tr[data-item="broken_tool"]')).to_contain_text("strnig")
    assert not Job.objects.filter(kind="import").exists()
    assert ToolChange.objects.count() == changes
    assert not Tool.objects.filter(name="get_weather").exists()
    screenshot(page, "curator-import-dry-run")

    page.get_by_test_id("import-confirm").click()
    expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
    expect(page.get_by_test_id("job-state")).to_have_text("succeeded", timeout=20000)
    expect(page.locator("[data-testid=count-created] dd")).to_have_text("1")
    expect(page.locator("[data-testid=count-updated] dd")).to_have_text("1")
    expect(page.locator("[data-testid=count-unchanged] dd")).to_have_text("1")
    expect(page.locator("[data-testid=count-rejected] dd")).to_have_text("1")
    assert Job.objects.get(kind="import").payload == document


def test_every_sample_file_downloads_from_the_import_page_and_previews_cleanly(
    page,
):
    ensure_default_catalog()
    page.goto("/import/")
    links = page.get_by_test_id("import-samples").get_by_role("link")
    expect(links).to_have_count(len(FORMATS))
    for fmt in FORMATS:
        href = page.get_by_role("link", name=fmt, exact=True).get_attribute("href")
        sample = page.request.get(href)
        assert sample.ok, href
        page.goto("/import/")
        page.select_option("#id_format", fmt)
        upload(page, sample.json())
        page.get_by_role("button", name="Preview import (dry run)").click()
        expect(page.locator("[data-testid=preview-created] dd")).to_have_text("2")
        expect(page.locator("[data-testid=preview-rejected] dd")).to_have_text("0")
    assert not Tool.objects.exists()


# 5. Keys people can manage ----------------------------------------------------------


@pytest.fixture
def admin_page(browser, live_server):
    with signed_in(browser, live_server, make_user("ada", superuser=True)) as tab:
        yield tab


def test_an_admin_edits_searches_and_pages_keys(admin_page, screenshot):
    page = admin_page
    ensure_default_catalog()
    make_client_key("support-bot", "agent", roles=["support"])
    make_client_key("old-script", "curator")
    ApiClient.objects.filter(name="old-script").update(
        expires=timezone.now() - timedelta(days=2)
    )
    for i in range(26):
        make_client_key(f"fleet-{i:02d}", "agent")
    page.get_by_role("link", name="API keys").click()
    expect(page.get_by_text("Page 1 of 2")).to_be_visible()

    page.fill("#key-q", "support")
    page.get_by_role("button", name="Search").click()
    rows = page.locator("tr[data-client]")
    expect(rows).to_have_count(1)
    row = page.locator('tr[data-client="support-bot"]')
    row.get_by_role("link", name="Edit").click()
    edit = page.get_by_test_id("edit-key")
    expect(edit.locator("#id_roles")).to_have_value("support")
    expect(edit.locator("#id_all_catalogs")).to_be_checked()

    # "Every catalog" is a box: unticking it and naming none is refused.
    edit.locator("#id_all_catalogs").uncheck()
    edit.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("edit-key")).to_contain_text(
        "catalogs: name the catalogs the key may see"
    )
    edit = page.get_by_test_id("edit-key")
    edit.locator("#id_roles").fill("support, billing")
    edit.locator("#id_catalogs").fill("default")
    edit.locator("#id_rate_limit_per_minute").fill("30")
    edit.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Saved the changes to support-bot.")).to_be_visible()
    row = page.locator('tr[data-client="support-bot"]')
    expect(row).to_contain_text("support, billing")
    expect(row).to_contain_text("default")
    expect(row).to_contain_text("30")

    page.fill("#key-q", "old-script")
    page.get_by_role("button", name="Search").click()
    old = page.locator('tr[data-client="old-script"]')
    expect(old).to_contain_text("expired")
    expect(old.get_by_role("button", name="Rotate key")).to_have_count(0)
    expect(old.get_by_role("link", name="Edit")).to_be_visible()
    page.goto("/keys/?q=bot")
    screenshot(page, "curator-keys")
    client = ApiClient.objects.get(name="support-bot")
    assert (client.roles, client.catalogs) == (["support", "billing"], ["default"])
    assert client.rate_limit_per_minute == 30


# 6. Small things seen on the walk ---------------------------------------------------


@pytest.fixture
def sample(transactional_db):
    from tests.factories import make_sample_catalog

    return make_sample_catalog("get_weather", "send_email")


def test_try_it_copies_the_request_as_curl_and_as_python(
    browser, live_server, curator, sample, screenshot
):
    with signed_in(browser, live_server, curator) as page:
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page.goto("/try/")
        page.fill("#id_query", "what's the weather in Paris?")
        page.get_by_role("button", name="Select tools").click()
        expect(page.get_by_test_id("pick").first).to_contain_text("get_weather")

        page.get_by_test_id("copy-curl").click()
        expect(page.locator(".api-calls .copied")).to_have_text("Copied curl.")
        curl = page.evaluate("navigator.clipboard.readText()")
        assert curl.startswith(f"curl -sS -X POST {live_server.url}/api/v1/select")
        assert "what'\"'\"'s the weather in Paris?" in curl
        page.get_by_test_id("copy-python").click()
        expect(page.locator(".api-calls .copied")).to_have_text("Copied Python.")
        python = page.evaluate("navigator.clipboard.readText()")
        assert "from quiver_client import Quiver" in python
        assert '"what\'s the weather in Paris?",' in python
        page.get_by_test_id("api-calls").locator("summary > span").first.click()
        expect(page.locator("#try-python")).to_be_visible()
        screenshot(page, "curator-try-it-copy")


def fits(page: Page, selector: str) -> bool:
    return page.evaluate(
        """(selector) => [...document.querySelectorAll(selector)].every((el) => {
             const card = el.closest('.card').getBoundingClientRect();
             const box = el.getBoundingClientRect();
             return el.scrollWidth <= el.clientWidth + 1 && box.right <= card.right + 1;
           })""",
        selector,
    )


def test_provider_previews_wrap_instead_of_running_off_the_edge(page):
    words = " ".join(["a-rather-long-description-of-what-it-does"] * 12)
    tool = make_tool(name="get_weather", description=words)
    page.set_viewport_size({"width": 900, "height": 900})
    page.goto(f"/tools/{tool.pk}/")
    for label in ("openai", "anthropic", "mcp"):
        page.locator("#provider-previews").get_by_text(label, exact=True).click()
        panel = f'#provider-previews .tab-panel[data-format="{label}"]'
        expect(page.locator(panel)).to_be_visible()
        assert fits(page, panel), label
    assert page.evaluate("document.documentElement.scrollWidth") <= 900


def line_breaks_after(page: Page, selector: str) -> list[str]:
    """The character before each line break inside the element."""
    return page.evaluate(
        """(selector) => {
             const el = document.querySelector(selector);
             const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
             const ends = []; let top = null; let before = '';
             for (let node = walker.nextNode(); node; node = walker.nextNode()) {
               for (let i = 0; i < node.length; i++) {
                 const range = document.createRange();
                 range.setStart(node, i); range.setEnd(node, i + 1);
                 const rect = range.getBoundingClientRect();
                 if (top !== null && rect.top > top + 2) ends.push(before);
                 top = rect.top; before = node.data[i];
               }
             }
             return ends;
           }""",
        selector,
    )


def test_long_tool_names_on_the_dashboard_wrap_at_word_parts(
    browser, live_server, compliance, api, screenshot
):
    make_tool(name=LONG_NAME, description="Export the quarterly invoice report.")
    key = make_client_key("finance-bot", "agent")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    body = {"query": "export the quarterly invoice report", "scorer": "bm25f"}
    assert api.post("/api/v1/select", body, format="json").status_code == 200
    with signed_in(browser, live_server, compliance) as page:
        page.set_viewport_size({"width": 800, "height": 900})
        page.goto("/audit/dashboard/")
        link = page.get_by_test_id("picked-link").filter(has_text="quarterly")
        expect(link).to_have_text(LONG_NAME)
        link.evaluate("(el) => el.setAttribute('id', 'long-name')")
        breaks = line_breaks_after(page, "#long-name")
        assert breaks, "the name should need more than one line at 800 px"
        assert set(breaks) <= {"_", ".", "-"}, breaks
        assert page.evaluate("document.documentElement.scrollWidth") <= 800
        screenshot(page, "curator-dashboard-long-names")


def test_the_403_and_404_pages_keep_the_persons_navigation(page, screenshot):
    page.goto("/audit/")
    expect(page.get_by_test_id("error-page")).to_contain_text("403")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Import")).to_be_visible()
    expect(nav.get_by_role("link", name="Audit")).to_have_count(0)
    screenshot(page, "curator-403")
    page.goto("/tools/987654/")
    expect(page.get_by_test_id("error-page")).to_contain_text("404")
    expect(nav.get_by_role("link", name="Import")).to_be_visible()
    nav.get_by_role("link", name="Import").click()
    expect(page.locator("h1")).to_have_text("Import tools")


def test_the_verify_page_shows_the_last_result_and_when_it_ran(
    browser, live_server, compliance
):
    with signed_in(browser, live_server, compliance) as page:
        page.goto("/audit/verify/")
        expect(page.get_by_test_id("verify-last")).to_have_count(0)
        page.get_by_test_id("run-verify").click()
        expect(page.get_by_test_id("verify-ok")).to_be_visible()
        page.reload()
        last = page.get_by_test_id("verify-last")
        expect(last).to_contain_text("the chain was intact")
        expect(last).to_contain_text("by cora")
        expect(last.locator("time")).to_have_attribute(
            "datetime", re.compile(timezone.now().strftime("%Y-%m-%d"))
        )


def test_the_api_docs_page_has_the_navigation_and_describes_each_endpoint(
    page, screenshot
):
    page.goto("/api/docs/")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Tools")).to_be_visible()
    expect(nav.get_by_role("link", name="Import")).to_be_visible()
    operation = page.locator(".opblock").filter(has_text="/api/v1/catalogs/")
    expect(operation.first).to_be_visible(timeout=15000)
    page.locator(".opblock-summary-path", has_text="/import/").first.click()
    expect(page.locator(".opblock-description-wrapper").first).to_contain_text(
        "dry_run"
    )
    screenshot(page, "curator-api-docs")
    nav.get_by_role("link", name="Tools").click()
    expect(page.locator("h1")).to_have_text("Tools")


def test_the_sign_in_page_speaks_to_everyone_who_signs_in(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    try:
        page = context.new_page()
        page.goto("/login/")
        text = page.get_by_test_id("sign-in-audience")
        for who in ("curators", "compliance readers", "approvers", "admins"):
            expect(text).to_contain_text(who)
    finally:
        context.close()
