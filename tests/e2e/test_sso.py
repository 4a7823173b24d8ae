"""Single sign-on in a real browser against a real OpenID provider (oidc-provider,
tests/oidc.py): people are made on their first sign-in with the groups their
claim maps to and brought up to date at the next; a claim that maps to nothing
gets no access; a tampered state, a replayed code, a changed nonce and ID tokens
for another issuer or audience, expired or signed by another key are refused and
audited; with password sign-in off, only the break-glass admin uses a password."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import override_settings
from playwright.sync_api import Browser, Page, Route, expect

from audit.models import AuditEvent
from catalog.services import ensure_default_catalog
from identity.models import UserCatalogAccess
from sso.models import ClaimMapping, Identity
from tests.e2e.conftest import PASSWORD, signed_in
from tests.factories import make_user
from tests.oidc import Provider, running_provider, settings_for

pytestmark = pytest.mark.browser

CALLBACK = re.compile(r".*/login/sso/callback/\?.*")
START = re.compile(r".*/login/sso/(\?.*)?$")
LOGIN_FORM = re.compile(r".*/interaction/[^/]+$")
# The provider's dev pages ask for web fonts: nothing leaves the machine.
OUTSIDE = re.compile(r"^https?://(?!127\.0\.0\.1[:/]|localhost[:/]).*")


@pytest.fixture(scope="module")
def provider(live_server: Any) -> Iterator[Provider]:
    with running_provider(f"{live_server.url}/login/sso/callback/") as running:
        yield running


@pytest.fixture
def sso(provider: Provider) -> Iterator[Provider]:
    """Quiver signs people in through the provider; three mappings."""
    ensure_default_catalog()
    names = ("admin", "curator", "compliance")
    groups = {n: Group.objects.get_or_create(name=n)[0] for n in names}
    curators = ClaimMapping.objects.create(value="acme-curators", catalogs=["default"])
    curators.groups.set([groups["curator"]])
    admins = ClaimMapping.objects.create(value="acme-admins", catalogs=None)
    admins.groups.set([groups["admin"]])
    with override_settings(QUIVER_OIDC=settings_for(provider)):
        yield provider


@contextmanager
def tab_in(browser: Browser, live_server: Any) -> Iterator[Page]:
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1200, "height": 820}
    )
    context.set_default_timeout(10000)
    context.set_default_navigation_timeout(30000)
    context.route(OUTSIDE, lambda route: route.abort())
    try:
        yield context.new_page()
    finally:
        context.close()


def at_provider(tab: Page, provider: Provider, login: str) -> None:
    """From Quiver's sign-in page to the provider's form, signed in there as
    ``login``; the provider then sends the browser back to Quiver."""
    tab.goto("/login/")
    tab.get_by_test_id("sso-sign-in").click()
    tab.wait_for_url(f"{provider.issuer}/interaction/**")
    tab.fill("input[name=login]", login)
    tab.fill("input[name=password]", "whatever-the-provider-checks")
    tab.get_by_role("button", name="Sign-in").click()


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    return urlunsplit(parts._replace(query=urlencode({**query, **changes})))


def answered_with(**changes: str) -> Callable[[Route], None]:
    """A route for the provider's login form: its answer is followed here (the
    browser's cookies, no redirect taken) up to the redirect back to Quiver, which
    the browser is then given with ``changes`` made to its query. (A browser's
    routes see no request a redirect made.)"""

    def handle(route: Route) -> None:
        if route.request.method != "POST":
            route.continue_()
            return
        answer = route.fetch(max_redirects=0)
        requests = route.request.frame.page.context.request
        location = urljoin(route.request.url, answer.headers["location"])
        while not CALLBACK.match(location):
            answer = requests.get(location, max_redirects=0)
            location = urljoin(location, answer.headers["location"])
        route.fulfill(status=303, headers={"location": with_query(location, **changes)})

    return handle


def sent_with(**changes: str) -> Callable[[Route], None]:
    """A route for Quiver's sign-in start: the browser goes to the provider with
    ``changes`` made to the authorization request."""

    def handle(route: Route) -> None:
        answer = route.fetch(max_redirects=0)
        headers = {
            **answer.headers,
            "location": with_query(answer.headers["location"], **changes),
        }
        route.fulfill(response=answer, headers=headers)

    return handle


def refusals(reason: str) -> int:
    return AuditEvent.objects.filter(
        event_type="sign_in_refused", output__refused__icontains=reason
    ).count()


def groups_of(username: str) -> set[str]:
    person = get_user_model().objects.get(username=username)
    return set(person.groups.values_list("name", flat=True))


def catalogs_of(username: str) -> list[str] | None:
    row = UserCatalogAccess.objects.filter(user__username=username).first()
    return None if row is None else list(row.catalogs)


def test_the_first_sign_in_makes_the_person_and_the_next_brings_them_up_to_date(
    browser, live_server, sso, screenshot
):
    sso.people({"alice": {"groups": ["acme-curators", "acme-cooking-club"]}})
    with tab_in(browser, live_server) as tab:
        tab.goto("/login/")
        expect(tab.get_by_test_id("sso-sign-in")).to_have_text("Sign in with Acme ID")
        screenshot(tab, "sso-sign-in")
        at_provider(tab, sso, "alice")
        tab.wait_for_url("**/tools/")
        expect(tab.get_by_test_id("username")).to_have_text("alice")
    alice = get_user_model().objects.get(username="alice")
    assert not alice.has_usable_password()
    assert groups_of("alice") == {"curator"} and catalogs_of("alice") == ["default"]
    identity = Identity.objects.get(user=alice)
    assert (identity.issuer, identity.subject) == (sso.issuer, "alice")
    first = AuditEvent.objects.get(event_type="sign_in", actor=alice)
    assert first.output["created"] is True
    assert first.input["matched"] == ["acme-curators"]
    made = AuditEvent.objects.get(event_type="access_changed", input__user_id=alice.pk)
    assert made.input["via"] == "sso" and made.input["before"] is None

    sso.people({"alice": {"groups": ["acme-admins"]}})
    with tab_in(browser, live_server) as tab:
        at_provider(tab, sso, "alice")
        tab.wait_for_url("**/tools/")
        expect(tab.get_by_role("link", name="People")).to_be_visible()
    assert groups_of("alice") == {"admin"} and catalogs_of("alice") is None
    changed = AuditEvent.objects.filter(
        event_type="access_changed", input__user_id=alice.pk
    ).latest("pk")
    assert changed.input["before"]["groups"] == ["curator"]
    assert changed.output["after"]["groups"] == ["admin"]
    assert changed.output["after"]["catalogs"] == "*"
    assert get_user_model().objects.filter(username__startswith="alice").count() == 1


def test_a_claim_that_maps_to_nothing_gets_no_access_and_a_clear_page(
    browser, live_server, sso
):
    sso.people({"bob": {"groups": ["acme-curators"]}, "mia": {"groups": ["sales"]}})
    with tab_in(browser, live_server) as tab:
        at_provider(tab, sso, "mia")
        expect(tab.get_by_test_id("sso-no-access")).to_contain_text("sales")
        tab.goto("/tools/")
        tab.wait_for_url("**/login/?next=/tools/")
    assert not get_user_model().objects.filter(username="mia").exists()
    assert refusals("map to no Quiver group") == 1

    with tab_in(browser, live_server) as tab:
        at_provider(tab, sso, "bob")
        tab.wait_for_url("**/tools/")
    sso.people({"bob": {"groups": ["sales"]}})
    with tab_in(browser, live_server) as tab:
        at_provider(tab, sso, "bob")
        expect(tab.get_by_test_id("sso-no-access")).to_be_visible()
    assert groups_of("bob") == set() and catalogs_of("bob") == []
    lost = AuditEvent.objects.filter(event_type="access_changed").latest("pk")
    assert lost.output["after"]["catalogs"] == [] and lost.input["via"] == "sso"
    assert refusals("map to no Quiver group") == 2


def test_a_tampered_state_is_refused_and_audited(browser, live_server, sso):
    sso.people({"eve": {"groups": ["acme-admins"]}})
    with tab_in(browser, live_server) as tab:
        tab.route(LOGIN_FORM, answered_with(state="forged-state"))
        at_provider(tab, sso, "eve")
        expect(tab.get_by_test_id("sso-reason")).to_contain_text("state:")
        tab.goto("/tools/")
        tab.wait_for_url("**/login/?next=/tools/")
    assert refusals("state: not the sign-in this browser started") == 1
    assert not get_user_model().objects.filter(username="eve").exists()


def test_a_replayed_code_is_refused(browser, live_server, sso):
    sso.people({"carl": {"groups": ["acme-curators"]}})
    seen: list[str] = []
    with tab_in(browser, live_server) as tab:
        tab.on("request", lambda r: seen.append(r.url) if CALLBACK.match(r.url) else 0)
        at_provider(tab, sso, "carl")
        tab.wait_for_url("**/tools/")
        used_code = dict(parse_qsl(urlsplit(seen[0]).query))["code"]
        # The same answer again: its sign-in is spent.
        tab.goto(seen[0])
        expect(tab.get_by_test_id("sso-reason")).to_contain_text("no sign-in was")
    with tab_in(browser, live_server) as tab:
        # A new sign-in given the spent code: the provider refuses it.
        tab.route(LOGIN_FORM, answered_with(code=used_code))
        at_provider(tab, sso, "carl")
        expect(tab.get_by_test_id("sso-reason")).to_have_text("provider: invalid_grant")
    assert refusals("provider: invalid_grant") == 1
    assert AuditEvent.objects.filter(event_type="sign_in").count() == 1


def test_an_id_token_with_another_nonce_is_refused(browser, live_server, sso):
    sso.people({"dan": {"groups": ["acme-curators"]}})
    with tab_in(browser, live_server) as tab:
        tab.route(START, sent_with(nonce="a-nonce-quiver-never-sent"))
        at_provider(tab, sso, "dan")
        expect(tab.get_by_test_id("sso-reason")).to_contain_text("nonce")
    assert refusals("nonce") == 1
    assert not get_user_model().objects.filter(username="dan").exists()


@pytest.mark.parametrize(
    ("tamper", "rule"),
    [
        ("issuer", "iss"),
        ("audience", "aud"),
        ("expired", "exp"),
        ("signature", "bad_signature"),
    ],
)
def test_an_id_token_quiver_cannot_trust_is_refused(
    browser, live_server, sso, tamper, rule
):
    sso.people({"fay": {"groups": ["acme-admins"], "tamper": tamper}})
    with tab_in(browser, live_server) as tab:
        at_provider(tab, sso, "fay")
        expect(tab.get_by_test_id("sso-reason")).to_contain_text(rule)
    assert refusals("id_token:") == 1
    assert not get_user_model().objects.filter(username="fay").exists()


def test_with_passwords_off_only_the_break_glass_admin_uses_one(
    browser, live_server, sso, screenshot
):
    make_user("pat", groups=("curator",))
    make_user("root", superuser=True)
    with (
        override_settings(QUIVER_PASSWORD_LOGIN=False, QUIVER_BREAK_GLASS_ADMIN="root"),
        tab_in(browser, live_server) as tab,
    ):
        tab.goto("/login/")
        tab.get_by_text("Break-glass sign-in").click()
        screenshot(tab, "sso-sign-in-passwords-off")
        tab.fill("#id_username", "pat")
        tab.fill("#id_password", PASSWORD)
        tab.get_by_role("button", name="Sign in", exact=True).click()
        expect(tab.get_by_role("alert")).to_contain_text(
            "Password sign-in is turned off"
        )
        tab.fill("#id_username", "root")
        tab.fill("#id_password", PASSWORD)
        tab.get_by_role("button", name="Sign in", exact=True).click()
        tab.wait_for_url("**/tools/")
    assert refusals("password sign-in is off") == 1
    glass = AuditEvent.objects.get(event_type="sign_in", actor_name="root")
    assert glass.input == {"method": "password", "break_glass": True}


def test_an_admin_maps_a_claim_value_in_the_console(
    browser, live_server, sso, screenshot
):
    admin = make_user("ada", superuser=True)
    with signed_in(browser, live_server, admin) as tab:
        tab.get_by_role("link", name="Sign-in").click()
        expect(tab.get_by_test_id("redirect-uri")).to_have_text(
            f"{live_server.url}/login/sso/callback/"
        )
        tab.fill("#id_value", "acme-auditors")
        tab.get_by_label("compliance").check()
        tab.fill("#id_catalogs", "default")
        tab.get_by_role("button", name="Add mapping").click()
        row = tab.locator('tr[data-mapping="acme-auditors"]')
        expect(row).to_contain_text("compliance")
        expect(row).to_contain_text("default")
        screenshot(tab, "sso-mapping")
    event = AuditEvent.objects.get(event_type="sign_in_settings")
    assert event.actor_name == "ada"
    assert event.output["after"] == {
        "value": "acme-auditors",
        "groups": ["compliance"],
        "catalogs": ["default"],
    }
