"""Access tokens where they are used: /mcp and the REST API of a real gunicorn.
Every request checks the issuer, the audience, the expiry (within a bounded
clock skew), the grant and the scope; a token acts as its person through the
policy approved, never more than the person holds at that moment; a refused
token Quiver can tell the owner of is an ``oauth_refused`` row."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group

from audit.models import AuditEvent
from identity.models import UserCatalogAccess
from oauth.services.connections import revoke_connection
from tests.conftest import worker_env
from tests.factories import make_tool, make_user
from tests.oauth_flow import connect, forge, issue
from tests.outages import running_web

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with running_web(worker_env(), "oauth-tokens") as url:
        yield url


@pytest.fixture
def url(transactional_db: None, server_url: str) -> str:
    make_tool(name="get_weather", description="Current weather for a city.")
    make_tool(
        name="refund_order",
        description="Refund the order of a customer.",
        allowed_roles=["support"],
    )
    return server_url


@pytest.fixture
def alice(url: str) -> Any:
    return make_user("alice", groups=("support",))


@pytest.fixture
def connection(alice: Any) -> Any:
    return connect(alice, roles=("support",))


def search(url: str, token: str, query: str) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": query}},
    }
    return httpx.post(
        f"{url}/mcp",
        content=json.dumps(body),
        headers={"Authorization": f"Bearer {token}", **HEADERS},
        timeout=60,
    )


def found_names(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert not result.get("isError"), result
    return [tool["name"] for tool in result["structuredContent"]["tools"]]


def select(url: str, token: str, query: str) -> httpx.Response:
    return httpx.post(
        f"{url}/api/v1/select",
        json={"query": query},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def refused_rows() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="oauth_refused").order_by("id"))


def test_a_token_searches_over_mcp_and_selects_over_the_api_as_its_person(
    url, connection
):
    token = issue(connection, url)["access_token"]
    assert "refund_order" in found_names(search(url, token, "refund an order"))
    answer = select(url, token, "refund an order")
    assert answer.status_code == 200, answer.text
    rows = AuditEvent.objects.filter(event_type="selection").order_by("id")
    assert rows.count() == 2
    for row in rows:
        acting = row.input["acting_for"]
        assert acting["person"] == "alice"
        assert acting["oauth_client"] == {
            "id": connection.client.client_id,
            "name": "Probe",
        }
        assert acting["key_id"] == connection.principal_id
        assert len(acting["token_id"]) == 32


def test_a_token_is_used_only_where_its_scope_says(url, connection):
    only_mcp = issue(connection, url, scope="mcp")["access_token"]
    answer = select(url, only_mcp, "weather")
    assert answer.status_code == 403
    assert "scope" in answer.json()["detail"]
    only_api = issue(connection, url, scope="api")["access_token"]
    answer = search(url, only_api, "weather")
    assert answer.status_code == 403
    challenge = answer.headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="mcp"' in challenge
    assert [row.output["error"] for row in refused_rows()] == [
        "insufficient_scope",
        "insufficient_scope",
    ]


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"exp": int(time.time()) - 600}, "expired"),
        ({"aud": "https://other.example/mcp"}, "another resource"),
        ({"iss": "https://other.example"}, "another authorization server"),
        ({"typ": "JWT"}, "not an access token"),
        ({"client_id": "someone-else"}, "another client"),
        ({"sub": "999999"}, "another person"),
        ({"exp": None}, "exp"),
    ],
)
def test_a_refused_token_is_a_401_naming_why_and_an_audit_row(
    url, connection, claims, why
):
    token = forge(connection, url, **claims)
    for answer in (search(url, token, "weather"), select(url, token, "weather")):
        assert answer.status_code == 401, answer.text
        assert why in answer.json()["detail"]
        challenge = answer.headers["WWW-Authenticate"]
        assert (
            f'resource_metadata="{url}/.well-known/oauth-protected-resource/mcp"'
            in (challenge)
        )
    assert (
        'error="invalid_token"'
        in search(url, token, "weather").headers["WWW-Authenticate"]
    )
    rows = refused_rows()
    assert len(rows) == 3
    assert rows[0].output["error"] == "invalid_token"
    assert rows[0].input["acting_for"]["person"] == "alice"


def test_a_token_just_past_its_expiry_is_within_the_clock_skew(url, connection):
    token = forge(connection, url, exp=int(time.time()) - 20)
    assert found_names(search(url, token, "weather"))


def test_a_token_of_another_key_or_tampered_is_a_guess_with_no_row(url, connection):
    good = issue(connection, url)["access_token"]
    head, body, signature = good.split(".")
    tampered = f"{head}.{body[:-4]}AAAA.{signature}"
    for token in (tampered, "not-a-token", good[:-8] + "AAAAAAAA"):
        answer = search(url, token, "weather")
        assert answer.status_code == 401
    assert refused_rows() == []


def test_revoking_the_token_or_the_connection_stops_it_at_once(url, connection):
    tokens = issue(connection, url)
    answer = httpx.post(
        f"{url}/oauth/revoke",
        data={
            "token": tokens["access_token"],
            "client_id": connection.client.client_id,
        },
    )
    assert answer.status_code == 200
    assert search(url, tokens["access_token"], "weather").status_code == 401
    other = issue(connection, url)["access_token"]
    assert search(url, other, "weather").status_code == 200
    revoke_connection(connection, actor=None)
    assert search(url, other, "weather").status_code == 401
    rows = refused_rows()
    assert len(rows) == 2  # each refusal of a revoked token is on record
    assert all(row.input["acting_for"]["person"] == "alice" for row in rows)
    assert {row.output["error"] for row in rows} == {"invalid_token"}


def test_a_person_losing_access_shrinks_the_token_at_once(url, alice, connection):
    token = issue(connection, url)["access_token"]
    assert "refund_order" in found_names(search(url, token, "refund an order"))
    alice.groups.remove(Group.objects.get(name="support"))
    assert "refund_order" not in found_names(search(url, token, "refund an order"))
    UserCatalogAccess.objects.create(user=alice, catalogs=[])
    answer = select(url, token, "weather")
    assert answer.status_code == 404
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert search(url, token, "weather").status_code == 401


def test_a_token_in_the_url_is_refused(url, connection):
    token = issue(connection, url)["access_token"]
    answer = httpx.post(
        f"{url}/mcp?access_token={token}", content="{}", headers=HEADERS, timeout=30
    )
    assert answer.status_code == 400
    assert "never in a URL" in answer.json()["detail"]
