"""The Approvals page in a real browser: an approver sees a call wait, a new one
appear by itself (htmx polling), denies one with a reason and approves another."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from calls.models import Approval, ApprovalStatus
from identity.services import create_api_client
from tests.calls.approval_rows import make_approval, restore_approver_groups
from tests.e2e.conftest import signed_in
from tests.factories import make_user

pytestmark = pytest.mark.browser


@pytest.fixture
def agent():
    client, _key = create_api_client("files-bot", "agent", catalogs="*")
    return client.user


@pytest.fixture
def approver_page(browser, live_server):
    restore_approver_groups()
    with signed_in(browser, live_server, make_user("ann", groups=("approver",))) as tab:
        yield tab


def row(page, approval):
    return page.locator(f'tr[data-approval="{approval.pk}"]')


def test_an_approver_decides_calls_as_they_arrive(approver_page, agent, screenshot):
    page = approver_page
    delete = make_approval(
        agent,
        tool_name="delete_file",
        arguments={"path": "/srv/reports/2026-q3.pdf", "recursive": False},
    )
    thermostat = make_approval(
        agent, tool_name="set_thermostat", arguments={"room": "lab", "celsius": 19}
    )

    page.get_by_role("link", name="Approvals").click()
    expect(page.locator("h1")).to_have_text("Approvals")
    expect(page.get_by_test_id("pending-count")).to_have_text("2")
    expect(row(page, delete)).to_contain_text('"path": "/srv/reports/2026-q3.pdf"')
    expect(row(page, delete)).to_contain_text("agent files-bot")

    note = make_approval(
        agent,
        tool_name="send_note",
        arguments={"to": "ops", "text": "<b>deploy</b> done"},
    )
    expect(row(page, note)).to_be_visible(timeout=12_000)  # polled, no reload
    expect(row(page, note)).to_contain_text('"text": "<b>deploy</b> done"')

    row(page, delete).get_by_role("button", name="Deny").click()
    expect(page.get_by_test_id("approval-error")).to_contain_text(
        "reason: a denial needs a reason"
    )
    row(page, delete).get_by_label("Reason").fill("Quarterly reports are kept.")
    row(page, delete).get_by_role("button", name="Deny").click()
    expect(page.get_by_test_id("pending-count")).to_have_text("2")
    row(page, thermostat).get_by_role("button", name="Approve").click()
    expect(page.get_by_test_id("pending-count")).to_have_text("1")
    expect(row(page, delete)).to_contain_text("Quarterly reports are kept.")
    expect(row(page, delete)).to_contain_text("Denied")
    expect(row(page, thermostat)).to_contain_text("by ann")

    assert Approval.objects.get(pk=delete.pk).status == ApprovalStatus.DENIED
    assert Approval.objects.get(pk=thermostat.pk).status == ApprovalStatus.APPROVED
    screenshot(page, "approvals")


def test_a_person_without_the_permission_has_no_approvals_link(
    browser, live_server, curator
):
    with signed_in(browser, live_server, curator) as page:
        expect(page.get_by_role("link", name="Approvals")).to_have_count(0)
        answer = page.goto("/approvals/")
        assert answer is not None and answer.status == 403
