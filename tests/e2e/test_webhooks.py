"""The webhooks pages in a real browser: an admin adds a webhook from the
Catalogs page, copies its secret (shown once), watches deliveries arrive in the
log (a failure with its error, a replay) and filters the log."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from identity.services import create_api_client
from notify import delivery
from notify.models import Delivery
from tests.e2e.conftest import signed_in
from tests.notify.conftest import ask_approval

pytestmark = pytest.mark.browser


def test_an_admin_adds_a_webhook_and_reads_its_deliveries(
    browser, live_server, admin_user, receiver, settings, screenshot
):
    agent = create_api_client("files-bot", "agent", catalogs="*")[0].user
    settings.QUIVER_PUBLIC_URL = live_server.url
    with signed_in(browser, live_server, admin_user) as page:
        page.get_by_role("link", name="Catalogs").click()
        page.locator('tr[data-catalog="default"]').get_by_role(
            "link", name="Webhooks"
        ).click()
        expect(page.locator("h1")).to_contain_text("Webhooks")
        expect(page.get_by_test_id("webhooks-empty")).to_be_visible()
        page.get_by_label("Name").fill("ops-pager")
        page.get_by_label("URL").fill(receiver.url)
        page.get_by_role("button", name="Add webhook").click()
        expect(page.get_by_test_id("new-secret")).to_contain_text("whsec_")
        page.get_by_role("link", name="ops-pager").click()
        expect(page.get_by_test_id("new-secret")).to_have_count(0)

        receiver.answer((500, "pager service down"), 200)
        first = ask_approval(agent, arguments={"path": "/srv/reports/2026-q3.pdf"})
        ask_approval(agent, arguments={"path": "/srv/logs/old.log"})
        for row in Delivery.objects.order_by("id"):
            delivery.attempt(row.pk)
        failed = Delivery.objects.get(approval_id=first.pk)
        Delivery.objects.filter(pk=failed.pk).update(status="failed")
        page.reload()
        log = page.get_by_test_id("deliveries")
        expect(log.locator("tr[data-delivery]")).to_have_count(2)
        expect(log).to_contain_text(
            "HTTP 500 Internal Server Error: pager service down"
        )
        log.get_by_role("button", name="Replay").click()
        expect(page.locator(".messages")).to_contain_text("is sent again")
        expect(log.locator("tr[data-delivery]")).to_have_count(3)
        screenshot(page, "webhooks")

        page.get_by_label("Status").select_option("failed")
        expect(log.locator("tr[data-delivery]")).to_have_count(1)
