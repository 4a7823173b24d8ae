"""People in a real browser: an admin makes a compliance reader limited to one
catalog, copies the one-time password once, changes their access, deactivates them."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from audit.models import AuditEvent
from tests.e2e.conftest import signed_in
from tests.factories import make_user

pytestmark = pytest.mark.browser


@pytest.fixture
def admin_page(browser, live_server):
    for name in ("admin", "curator", "compliance", "support"):
        Group.objects.get_or_create(name=name)
    make_user("pat", groups=("curator",))
    with signed_in(browser, live_server, make_user("ada", superuser=True)) as tab:
        yield tab


def test_an_admin_makes_a_person_edits_and_deactivates_them(admin_page, screenshot):
    page = admin_page
    page.get_by_role("link", name="People").click()
    expect(page.locator("h1")).to_have_text("People")
    expect(page.locator('tr[data-person="pat"]')).to_contain_text("curator")
    page.fill("#id_username", "cora")
    page.get_by_label("compliance").check()
    page.fill("#id_catalogs", "default")
    page.get_by_role("button", name="Create person").click()
    password = page.get_by_test_id("new-password").locator("code").inner_text()
    cora = get_user_model().objects.get(username="cora")
    assert cora.check_password(password)
    row = page.locator('tr[data-person="cora"]')
    expect(row).to_contain_text("compliance")
    expect(row).to_contain_text("default")
    screenshot(page, "people")
    row.get_by_role("link", name="Edit access").click()
    expect(page.locator("h1")).to_have_text("Access of cora")
    page.fill("#id_catalogs", "")
    page.check("#id_all_catalogs")
    page.get_by_role("button", name="Save access").click()
    expect(page.get_by_text("Saved the access of cora.")).to_be_visible()
    expect(page.locator('tr[data-person="cora"]')).to_contain_text("all catalogs")
    expect(page.get_by_test_id("new-password")).to_have_count(0)
    page.locator('tr[data-person="cora"]').get_by_role(
        "button", name="Deactivate"
    ).click()
    expect(page.locator('tr[data-person="cora"]')).to_contain_text("deactivated")
    events = AuditEvent.objects.filter(
        event_type="access_changed", input__user_id=cora.pk
    )
    assert events.count() == 3
    assert set(events.values_list("actor_name", flat=True)) == {"ada"}


def test_a_curator_has_no_people_entry(page):
    expect(page.get_by_role("link", name="People")).to_have_count(0)
