"""Calls run as the person: POST /api/v1/tool-calls/execute to a source that asks
each person for OAuth (a real MCP server protected by the SDK's authorization
server, whose ``whoami`` answers the account its token belongs to). Each person's
own token, never another's and never a shared one; ``needs_authorization`` with
the link to connect when there is none; a token the server expired, revoked or
refuses; the audit naming the person and the upstream account, never a token."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import AuditEvent
from identity.models import UserCatalogAccess
from identity.services.people import set_person_active
from sources.services import delete_source, update_source
from tests.calls.conftest import link_source
from tests.factories import make_client_key, make_user
from tests.sources.conftest import sync
from tests.upstream import running_upstream
from tests.vault.conftest import connection_of
from vault.models import Connection

URL = "/api/v1/tool-calls/execute"
WHOAMI = "notes__whoami"


def call_as(person: Any, name: str = WHOAMI, **arguments: Any) -> Any:
    api = APIClient()
    api.force_login(person)
    return api.post(URL, {"name": name, "arguments": arguments}, format="json")


def every_event_text() -> str:
    rows = AuditEvent.objects.order_by("pk").values("summary", "input", "output")
    return json.dumps(list(rows))


def outcomes() -> list[AuditEvent]:
    found = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    return [e for e in found if e.output["outcome"] != "started"]


def removals() -> list[str]:
    found = AuditEvent.objects.filter(event_type="upstream_auth").order_by("pk")
    return [e.output["reason"] for e in found if e.input["action"] == "removed"]


@pytest.fixture
def connected(notes, alice, connect):
    """Alice connected as alice-<test>, the source synced with her account."""

    def run(person: Any, account: str) -> Connection:
        connect(person, notes, account)
        found = connection_of(person, notes)
        assert found is not None
        return found

    run(alice, "alice-up")
    sync(notes)
    return run


def test_two_people_connected_to_one_source_each_see_their_own_account(
    connected, alice, bob, oauth_upstream, notes
):
    connected(bob, "bob-up")
    mine, theirs = call_as(alice), call_as(bob)
    assert mine.status_code == 200, mine.json()
    assert mine.json()["structured_content"] == {"account": "alice-up"}
    assert theirs.json()["structured_content"] == {"account": "bob-up"}
    assert oauth_upstream.callers == ["alice-up", "bob-up"]
    ran = [e for e in outcomes() if e.output["outcome"] == "ran"]
    assert [e.input["person"] for e in ran] == ["alice", "bob"]
    accounts = [e.input["upstream_account"] for e in ran]
    assert accounts[0]["connection"] == str(connection_of(alice, notes).public_id)
    assert accounts[1] == {
        "kind": "person",
        "person": "bob",
        "connection": str(connection_of(bob, notes).public_id),
    }
    text = every_event_text()
    for account in ("alice-up", "bob-up"):
        for token in oauth_upstream.authority.tokens_of(account):
            assert token not in text


def test_a_person_without_a_connection_needs_authorization_and_gets_the_link(
    connected, bob, oauth_upstream, notes
):
    answer = call_as(bob)
    assert answer.status_code == 403
    body = answer.json()
    assert body["error"] == "needs_authorization"
    assert body["outcome"] == body["status"] == "needs_authorization"
    assert (
        body["authorization_url"]
        == f"http://testserver/upstream-accounts/?source={notes.pk}"
    )
    assert "bob has not connected their account" in body["detail"]
    assert oauth_upstream.callers == []
    (row,) = outcomes()
    assert row.output["outcome"] == "needs_authorization"
    assert row.input["person"] == "bob"
    assert "upstream_account" not in row.input


def test_a_key_bound_to_nobody_never_runs_as_anyone(connected, api, oauth_upstream):
    key = make_client_key("agent-nobody", "agent")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    answer = api.post(URL, {"name": WHOAMI, "arguments": {}}, format="json")
    assert answer.status_code == 403
    body = answer.json()
    assert body["error"] == "needs_authorization"
    assert body["authorization_url"] is None
    assert "acts for no person" in body["detail"]
    assert oauth_upstream.callers == []


def test_keys_bound_to_a_person_run_as_that_person_and_never_as_another(
    connected, alice, bob, api, oauth_upstream, notes
):
    connected(bob, "bob-up")
    carol = make_user("carol")
    answers = {}
    for person in (alice, bob, carol):
        key = make_client_key(f"agent-of-{person.username}", "agent", person=person)
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        answers[person.username] = api.post(
            URL, {"name": WHOAMI, "arguments": {}}, format="json"
        )
    assert answers["alice"].json()["structured_content"] == {"account": "alice-up"}
    assert answers["bob"].json()["structured_content"] == {"account": "bob-up"}
    refused = answers["carol"]
    assert (refused.status_code, refused.json()["error"]) == (
        403,
        "needs_authorization",
    )
    link = f"http://testserver/upstream-accounts/?source={notes.pk}"
    assert refused.json()["authorization_url"] == link
    assert oauth_upstream.callers == ["alice-up", "bob-up"]
    persons = [(e.input["person"], e.output["outcome"]) for e in outcomes()]
    assert persons == [
        ("alice", "ran"),
        ("bob", "ran"),
        ("carol", "needs_authorization"),
    ]


def test_a_token_the_server_expired_is_refreshed_and_the_call_runs_once(
    connected, alice, oauth_upstream, notes
):
    oauth_upstream.authority.expire_access("alice-up")
    before = connection_of(alice, notes).access_encrypted
    answer = call_as(alice)
    assert answer.status_code == 200, answer.json()
    assert answer.json()["structured_content"] == {"account": "alice-up"}
    assert oauth_upstream.callers == ["alice-up"]
    assert oauth_upstream.authority.refresh_requests == 1
    assert connection_of(alice, notes).access_encrypted != before


def test_a_token_expired_in_the_vault_is_refreshed_before_the_call(
    connected, alice, oauth_upstream, notes
):
    Connection.objects.filter(person=alice).update(
        expires=timezone.now() - timedelta(seconds=1)
    )
    answer = call_as(alice)
    assert answer.status_code == 200, answer.json()
    assert oauth_upstream.authority.refresh_requests == 1
    refreshed = connection_of(alice, notes)
    assert refreshed.refreshed is not None
    assert refreshed.expires > timezone.now() + timedelta(minutes=30)


def test_a_token_revoked_at_the_server_removes_the_connection(
    connected, alice, oauth_upstream, notes
):
    oauth_upstream.authority.revoke_account("alice-up")
    answer = call_as(alice)
    assert answer.status_code == 403
    assert answer.json()["error"] == "needs_authorization"
    assert answer.json()["authorization_url"].endswith(f"?source={notes.pk}")
    assert connection_of(alice, notes) is None
    assert removals() == ["the server refused its refresh (invalid_grant)"]
    started, ended = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    assert started.output["outcome"] == "started"
    assert ended.output["outcome"] == "needs_authorization"
    assert ended.input["call_id"] == started.pk
    assert oauth_upstream.callers == []


def test_a_token_the_server_refuses_even_refreshed_is_given_up(
    connected, alice, oauth_upstream, notes
):
    oauth_upstream.authority.refuse_all = True
    answer = call_as(alice)
    assert answer.status_code == 403
    assert answer.json()["error"] == "needs_authorization"
    assert oauth_upstream.authority.refresh_requests == 1
    assert connection_of(alice, notes) is None
    assert removals() == ["the server refused its token again after a refresh"]
    assert oauth_upstream.callers == []


def test_a_person_calling_a_shared_header_source_runs_with_its_headers(
    db, alice, module_upstream
):
    link_source(module_upstream, headers={"Authorization": "Bearer shared-7"})
    answer = call_as(alice, "weather.get_forecast", city="Oslo")
    assert answer.status_code == 200, answer.json()
    (row,) = outcomes()
    assert row.input["upstream_account"] == {"kind": "shared"}
    assert row.input["person"] == "alice"


def test_a_deactivated_persons_connections_are_removed_and_revoked(
    connected,
    alice,
    admin_user,
    oauth_upstream,
    notes,
    django_capture_on_commit_callbacks,
):
    (token,) = oauth_upstream.authority.tokens_of("alice-up")
    with django_capture_on_commit_callbacks(execute=True):
        set_person_active(alice, False, actor=admin_user)
    assert connection_of(alice, notes) is None
    assert removals() == ["the person was deactivated"]
    assert oauth_upstream.authority.tokens_of("alice-up") == []
    assert oauth_upstream.authority.pairs[token] in oauth_upstream.authority.revoked


def test_deleting_the_source_removes_and_revokes_every_connection(
    connected,
    bob,
    admin_user,
    oauth_upstream,
    notes,
    django_capture_on_commit_callbacks,
):
    connected(bob, "bob-up")
    with django_capture_on_commit_callbacks(execute=True):
        delete_source(notes, actor=admin_user)
    assert Connection.objects.count() == 0
    assert removals() == ["the source was deleted"] * 2
    assert oauth_upstream.authority.tokens_of("alice-up") == []
    assert oauth_upstream.authority.tokens_of("bob-up") == []


def test_a_source_moved_to_another_origin_never_gets_the_token(
    connected, alice, admin_user, notes
):
    with running_upstream() as elsewhere:
        update_source(notes, {"url": elsewhere.url}, actor=admin_user)
        answer = call_as(alice)
        assert answer.status_code == 403
        assert answer.json()["error"] == "needs_authorization"
        assert "changed its authorization" in answer.json()["detail"]
        assert not any("authorization" in h for h in elsewhere.seen_headers)


def test_no_token_reaches_the_log(connected, alice, bob, oauth_upstream, caplog):
    caplog.set_level(logging.DEBUG)
    oauth_upstream.authority.expire_access("alice-up")
    call_as(alice)
    call_as(bob)
    tokens = [
        *oauth_upstream.authority.access,
        *oauth_upstream.authority.refresh,
        *oauth_upstream.authority.revoked,
    ]
    assert tokens
    for token in tokens:
        assert token not in caplog.text


def test_a_person_who_may_not_see_the_catalog_is_not_offered_it(connected, db):
    outsider = make_user("olga")
    UserCatalogAccess.objects.create(user=outsider, catalogs=[])
    answer = call_as(outsider)
    assert answer.status_code == 404
