"""API keys in a real browser: an admin makes a key, copies it once, revokes it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from identity.models import ApiClient
from identity.services.clients import hash_key
from tests.e2e.conftest import signed_in
from tests.factories import make_user

pytestmark = pytest.mark.browser


@pytest.fixture
def admin_page(browser, live_server):
    with signed_in(browser, live_server, make_user("ada", superuser=True)) as tab:
        yield tab


def test_an_admin_makes_a_key_sees_it_once_and_revokes_it(admin_page, screenshot):
    page = admin_page
    page.get_by_role("link", name="API keys").click()
    expect(page.locator("h1")).to_have_text("API keys")
    expect(page.get_by_text("No API keys yet.")).to_be_visible()
    page.fill("#id_name", "support-bot")
    page.fill("#id_roles", "support")
    page.check("#id_allow_unsafe")
    page.check("#id_all_catalogs")
    page.get_by_role("button", name="Create key").click()
    key = page.get_by_test_id("new-key").locator("code").inner_text()
    client = ApiClient.objects.get(name="support-bot")
    assert hash_key(key) == client.key_hash
    assert client.allow_unsafe is True
    row = page.locator('tr[data-client="support-bot"]')
    expect(row).to_contain_text("allowed")
    screenshot(page, "api-keys")
    row.get_by_role("button", name="Revoke").click()
    expect(page.locator('tr[data-client="support-bot"]')).to_contain_text("revoked")
    expect(page.get_by_test_id("new-key")).to_have_count(0)


def test_a_curator_has_no_api_keys_entry(page):
    expect(page.get_by_role("link", name="API keys")).to_have_count(0)
