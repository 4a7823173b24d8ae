"""A person connects their own account in a real browser: My connections, Connect,
the upstream's own sign-in page (an MCP server protected by the SDK's
authorization server, tests/oauth_upstream.py), back to Quiver connected; the
source's page shows its authorization server and the people connected; a call
made for the person then runs with their account."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import expect

from tests.e2e.conftest import signed_in
from tests.factories import make_user
from tests.oauth_upstream import OAuthUpstream, running_oauth_upstream
from tests.sources.conftest import sync
from tests.vault.conftest import add_oauth_source

pytestmark = pytest.mark.browser


@pytest.fixture
def oauth_upstream() -> Iterator[OAuthUpstream]:
    with running_oauth_upstream() as server:
        yield server


@pytest.fixture(autouse=True)
def long_job_lease(settings: Any) -> None:
    settings.QUIVER_JOB_LEASE_S = 600


def test_a_person_connects_their_account_and_their_calls_run_as_them(
    browser, live_server, oauth_upstream, screenshot
):
    admin = make_user("ada", superuser=True)
    notes = add_oauth_source(oauth_upstream.url, admin)
    dana = make_user("dana")
    with signed_in(browser, live_server, dana) as page:
        page.goto(f"/upstream-accounts/?source={notes.pk}")
        row = page.locator('tr[data-source="notes"]')
        expect(row.get_by_test_id("connection-state")).to_have_text("not connected")
        row.get_by_test_id("connect").click()
        page.wait_for_url(f"{oauth_upstream.issuer}/login*")
        page.fill("input[name=account]", "dana-up")
        page.get_by_role("button", name="Allow Quiver").click()
        page.wait_for_url("**/upstream-accounts/")
        expect(page.get_by_text("Connected your account at notes.")).to_be_visible()
        expect(row.get_by_test_id("connection-state")).to_have_text("connected")
        assert "dana-up" not in page.content()  # no token, no upstream account
        screenshot(page, "vault-connections")

    sync(notes)  # the first connection queued a sync: what a worker does with it
    api = Client()
    api.force_login(dana)
    ran = api.post(
        "/api/v1/tool-calls/execute",
        {"name": "notes__whoami", "arguments": {}},
        content_type="application/json",
    )
    assert ran.status_code == 200, ran.content
    assert ran.json()["structured_content"] == {"account": "dana-up"}

    with signed_in(browser, live_server, admin) as page:
        page.goto(f"/sources/{notes.pk}/")
        card = page.get_by_test_id("source-authorization")
        expect(card).to_contain_text(oauth_upstream.issuer)
        expect(page.get_by_test_id("connected-count")).to_have_text("1")
        screenshot(page, "vault-source")
