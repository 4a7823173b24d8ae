"""A person connects their own account at a source that asks for OAuth, through
the console's flow against a real OAuth-protected MCP server (the MCP SDK's
authorization server): the authorization request, the callback's checks (state,
issuer, source, code), the tokens kept encrypted and bound, disconnecting, and
every refusal audited without a code, a state or a token in it."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from audit.models import AuditEvent
from sources.models import SourceStatus, SourceTool
from tests.sources.conftest import sync
from tests.vault.conftest import (
    add_oauth_source,
    browser_as,
    come_back,
    connection_of,
    start,
)
from vault.models import Connection, Registration, SourceAuthorization


def auth_events(action: str | None = None) -> list[AuditEvent]:
    found = AuditEvent.objects.filter(event_type="upstream_auth").order_by("pk")
    return [e for e in found if action is None or e.input["action"] == action]


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    found = {**query(url), **changes}
    return parts._replace(query="&".join(f"{k}={v}" for k, v in found.items())).geturl()


def test_the_authorization_request_has_pkce_s256_state_the_resource_and_our_callback(
    notes, alice, oauth_upstream
):
    url = start(browser_as(alice), notes)
    asked = query(url)
    assert url.startswith(f"{oauth_upstream.issuer}/authorize?")
    assert asked["response_type"] == "code"
    assert asked["code_challenge_method"] == "S256"
    assert len(asked["code_challenge"]) == 43
    assert len(asked["state"]) >= 32
    assert asked["resource"] == oauth_upstream.url
    assert (
        asked["redirect_uri"]
        == f"http://testserver/upstream-accounts/callback/{notes.pk}/"
    )
    auth = SourceAuthorization.objects.get(source=notes)
    assert auth.registration == Registration.DYNAMIC
    assert asked["client_id"] == auth.client_id
    registered = oauth_upstream.authority.clients[auth.client_id]
    assert [str(u) for u in registered.redirect_uris or []] == [asked["redirect_uri"]]


def test_a_person_connects_and_the_tokens_are_kept_encrypted_and_bound(
    notes, alice, connect, oauth_upstream
):
    answer = connect(alice, notes, "alice-kept")
    assert answer.status_code == 302
    assert answer["Location"] == "/upstream-accounts/"
    connection = connection_of(alice, notes)
    assert connection is not None
    assert connection.resource == oauth_upstream.url
    assert connection.issuer == oauth_upstream.issuer
    (token,) = oauth_upstream.authority.tokens_of("alice-kept")
    assert token not in connection.access_encrypted
    assert connection.access_encrypted.startswith("gAAAA")  # Fernet
    assert connection.refresh_encrypted.startswith("gAAAA")
    (event,) = auth_events("connected")
    assert event.actor_name == "alice"
    assert event.output["connection"] == str(connection.public_id)
    assert token not in json.dumps([event.input, event.output])


def test_the_first_connected_account_syncs_the_waiting_source(
    notes, alice, connect, oauth_upstream
):
    assert notes.status == SourceStatus.AUTHORIZE
    connect(alice, notes, "alice-up")
    sync(notes)
    notes.refresh_from_db()
    assert notes.status == SourceStatus.OK
    links = SourceTool.objects.filter(source=notes)
    assert set(links.values_list("upstream_name", flat=True)) == {"whoami", "add_note"}


def test_a_tampered_state_is_refused_audited_and_nothing_is_kept(
    notes, alice, oauth_upstream
):
    browser = browser_as(alice)
    back = oauth_upstream.approve(start(browser, notes), "alice-up")
    answer = come_back(browser, with_query(back, state="x" * 43))
    assert answer.status_code == 400
    assert b"state: no connection was started with this state" in answer.content
    assert connection_of(alice, notes) is None
    (refused,) = auth_events("refused")
    assert refused.input["person"] == "alice"
    assert refused.output["reason"].startswith("state:")
    code = query(back)["code"]
    assert code not in json.dumps([refused.input, refused.output])
    assert oauth_upstream.authority.code_exchanges == 0


def test_a_replayed_callback_is_refused_the_state_is_spent(
    notes, alice, oauth_upstream
):
    browser = browser_as(alice)
    back = oauth_upstream.approve(start(browser, notes), "alice-up")
    assert come_back(browser, back).status_code == 302
    again = come_back(browser, back)
    assert again.status_code == 400
    assert auth_events("refused")[0].output["reason"].startswith("state:")
    assert Connection.objects.filter(person=alice).count() == 1


def test_a_replayed_code_with_a_fresh_state_is_refused_by_the_server(
    notes, alice, oauth_upstream
):
    browser = browser_as(alice)
    first = oauth_upstream.approve(start(browser, notes), "alice-up")
    assert come_back(browser, first).status_code == 302
    fresh_state = query(start(browser, notes))["state"]
    replay = with_query(first, state=fresh_state)
    answer = come_back(browser, replay)
    assert answer.status_code == 400
    reason = auth_events("refused")[0].output["reason"]
    assert reason == "code: the authorization server refused it (invalid_grant)"


def test_another_persons_callback_is_refused(notes, alice, bob, oauth_upstream):
    back = oauth_upstream.approve(start(browser_as(alice), notes), "alice-up")
    answer = come_back(browser_as(bob), back)
    assert answer.status_code == 400
    assert connection_of(bob, notes) is None and connection_of(alice, notes) is None
    assert auth_events("refused")[0].actor_name == "bob"


def test_the_servers_refusal_is_refused_and_audited(notes, alice, oauth_upstream):
    browser = browser_as(alice)
    state = query(start(browser, notes))["state"]
    answer = browser.get(
        f"/upstream-accounts/callback/{notes.pk}/",
        {"error": "access_denied", "state": state},
    )
    assert answer.status_code == 400
    reason = auth_events("refused")[0].output["reason"]
    assert reason == "authorization: the server answered access_denied"


@pytest.fixture
def second_server():
    from tests.oauth_upstream import running_oauth_upstream

    with running_oauth_upstream() as server:
        yield server


def test_an_answer_naming_another_issuer_is_refused_mix_up(
    notes, alice, oauth_upstream
):
    oauth_upstream.authority.iss_override = "http://127.0.0.1:9/"
    browser = browser_as(alice)
    back = oauth_upstream.approve(start(browser, notes), "alice-up")
    answer = come_back(browser, back)
    assert answer.status_code == 400
    assert auth_events("refused")[0].output["reason"].startswith("iss:")
    assert oauth_upstream.authority.code_exchanges == 0


def test_an_answer_for_one_source_at_anothers_callback_is_refused_mix_up(
    notes, alice, oauth_upstream, second_server, admin_user
):
    other = add_oauth_source(second_server.url, admin_user, name="other")
    browser = browser_as(alice)
    start(browser, other)  # registered there too
    back = oauth_upstream.approve(start(browser, notes), "alice-up")
    at_other = back.replace(f"/callback/{notes.pk}/", f"/callback/{other.pk}/")
    answer = come_back(browser, at_other)
    assert answer.status_code == 400
    reason = auth_events("refused")[0].output["reason"]
    assert reason.startswith("state: the connection was started for another source")
    assert oauth_upstream.authority.code_exchanges == 0
    assert second_server.authority.code_exchanges == 0


def test_disconnecting_revokes_the_tokens_at_the_server_and_is_audited(
    notes, alice, connect, oauth_upstream
):
    connect(alice, notes, "alice-leaves")
    connection = connection_of(alice, notes)
    assert connection is not None
    (token,) = oauth_upstream.authority.tokens_of("alice-leaves")
    answer = browser_as(alice).post(
        f"/upstream-accounts/{connection.public_id}/disconnect/"
    )
    assert answer.status_code == 302
    assert connection_of(alice, notes) is None
    refresh = oauth_upstream.authority.pairs[token]
    assert refresh in oauth_upstream.authority.revoked  # and with it, its grant
    assert oauth_upstream.authority.tokens_of("alice-leaves") == []
    (event,) = auth_events("disconnected")
    assert event.input["revoked"] is True


def test_nobody_disconnects_another_persons_connection(notes, alice, bob, connect):
    connect(alice, notes, "alice-up")
    connection = connection_of(alice, notes)
    assert connection is not None
    answer = browser_as(bob).post(
        f"/upstream-accounts/{connection.public_id}/disconnect/"
    )
    assert answer.status_code == 404
    assert connection_of(alice, notes) is not None


def test_my_connections_lists_the_sources_and_only_my_own_connection(
    notes, alice, bob, connect
):
    connect(alice, notes, "alice-up")
    mine = browser_as(alice).get("/upstream-accounts/").content.decode()
    theirs = browser_as(bob).get("/upstream-accounts/").content.decode()
    assert 'data-source="notes"' in mine and 'data-source="notes"' in theirs
    assert ">connected<" in mine
    assert ">not connected<" in theirs


def test_the_connections_page_lets_its_forms_reach_only_the_authorization_servers(
    notes, alice, oauth_upstream
):
    policy = browser_as(alice).get("/upstream-accounts/")["Content-Security-Policy"]
    [form_action] = [d for d in policy.split("; ") if d.startswith("form-action")]
    assert form_action == f"form-action 'self' {oauth_upstream.issuer}"
    other = browser_as(alice).get("/tools/")["Content-Security-Policy"]
    assert "form-action 'self';" in other
