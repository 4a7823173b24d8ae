"""Tokens of the company's authorization server: verified against its JWKS (found
through its metadata, which must name it) or introspected (RFC 7662), checked for
issuer, audience, expiry and scope, mapped to a Quiver person by a claim, acting
through a connection whose policy is the token's scopes within what the person
holds now. The server here is a small HTTP server of the tests, signing with a
key of its own: it stands for Okta, Entra ID or Keycloak."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from rest_framework.test import APIClient

from audit.models import AuditEvent
from config.env_oauth import ExternalServer
from oauth import external
from oauth.models import Connection
from oauth.services.connections import revoke_connection
from tests.documents import Documents, serving_documents
from tests.factories import make_tool, make_user

pytestmark = pytest.mark.django_db
AUDIENCE = "api://quiver"


class Company:
    """The company's server: its metadata, its keys, its tokens."""

    def __init__(self, documents: Documents) -> None:
        self.documents = documents
        self.issuer = documents.url + "/oauth2/default"
        self.key = RSAKey.generate_key(2048, parameters={"kid": "k1"})
        self.publish()
        documents.put(
            "/.well-known/oauth-authorization-server/oauth2/default",
            {"issuer": self.issuer, "jwks_uri": documents.url + "/keys"},
        )

    def publish(self, *keys: RSAKey) -> None:
        shown = [k.as_dict(private=False) for k in (self.key, *keys)]
        self.documents.put("/keys", {"keys": shown})

    def token(self, *, key: RSAKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": "00u1",
            "preferred_username": "alice",
            "cid": "claude-code-okta",
            "scp": ["mcp", "api"],
            "iat": now,
            "exp": now + 600,
            "jti": uuid.uuid4().hex,
            **claims,
        }
        body = {name: value for name, value in body.items() if value is not None}
        signer = key or self.key
        header = {"alg": "RS256", "kid": signer.kid}
        return jwt.encode(header, body, KeySet([signer]))


@pytest.fixture
def company(settings) -> Iterator[Company]:
    with serving_documents() as documents:
        server = Company(documents)
        settings.QUIVER_OAUTH = dataclasses.replace(
            settings.QUIVER_OAUTH,
            external=ExternalServer(
                issuer=server.issuer,
                audience=AUDIENCE,
                person_claim="preferred_username",
                jwks_url="",
                introspection_url=documents.url + "/introspect",
                client_id="quiver",
                client_secret="introspection-secret",
            ),
        )
        external.KEYS.keys = None
        yield server
        external.KEYS.keys = None


@pytest.fixture
def alice(db: None) -> Any:
    make_tool(name="get_weather", description="Current weather for a city.")
    make_tool(
        name="refund_order",
        description="Refund the order of a customer.",
        allowed_roles=["support"],
    )
    return make_user("alice", groups=("support",))


def select(token: str, query: str = "refund an order") -> Any:
    api = APIClient(HTTP_HOST="localhost")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return api.post("/api/v1/select", {"query": query}, format="json")


def names(answer: Any) -> list[str]:
    assert answer.status_code == 200, answer.content
    return [tool["name"] for tool in answer.json()["tools"]]


def test_a_company_token_acts_for_its_person_through_a_connection(company, alice):
    assert "refund_order" in names(select(company.token()))
    connection = Connection.objects.get()
    assert connection.person == alice
    assert connection.client.client_id == "claude-code-okta"
    assert connection.client.kind == "external"
    row = AuditEvent.objects.get(event_type="selection")
    assert row.input["acting_for"]["person"] == "alice"
    assert row.input["acting_for"]["oauth_client"]["id"] == "claude-code-okta"
    consent = AuditEvent.objects.get(event_type="oauth_consent")
    assert consent.input["via"] == "external token"
    assert company.documents.fetched.count("/keys") == 1
    names(select(company.token()))
    assert company.documents.fetched.count("/keys") == 1  # the keys are kept


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"aud": "api://another"}, "another resource"),
        ({"iss": "https://evil.example"}, "another authorization server"),
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"preferred_username": "mallory"}, "no active person"),
        ({"scp": ["profile"]}, "neither mcp nor api"),
        ({"scp": ["api", "role:billing"]}, "asks for more than alice holds"),
        ({"scp": ["api", "unsafe"]}, "asks for more than alice holds"),
        ({"cid": None}, "names no client"),
        ({"iat": None}, "iat"),
    ],
)
def test_a_company_token_that_does_not_hold_is_refused(company, alice, claims, why):
    answer = select(company.token(**claims))
    assert answer.status_code == 401, answer.content
    assert why in answer.json()["detail"]


def test_a_token_signed_by_a_key_the_company_does_not_publish_is_refused(
    company, alice
):
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k1"})
    assert select(company.token(key=stranger)).status_code == 401


def test_a_new_company_key_is_fetched_when_a_token_names_it(company, alice):
    names(select(company.token()))
    rotated = RSAKey.generate_key(2048, parameters={"kid": "k2"})
    company.publish(rotated)
    external.KEYS.fetched -= external.REFETCH_S + 1  # the last fetch was a while ago
    assert "refund_order" in names(select(company.token(key=rotated)))


def test_scopes_narrow_and_the_person_bounds_a_company_token(company, alice):
    narrowed = company.token(scp=["api", "catalog:default", "role:support"])
    assert "refund_order" in names(select(narrowed))
    alice.groups.remove(Group.objects.get(name="support"))
    assert select(narrowed).status_code == 401  # it asks for a role she lost
    assert "refund_order" not in names(select(company.token()))


def test_revoking_the_connection_stops_the_tokens_issued_before(company, alice):
    before = company.token(iat=int(time.time()) - 5)
    names(select(before))
    revoke_connection(Connection.objects.get(), actor=None)
    answer = select(before)
    assert answer.status_code == 401
    assert "before its connection was revoked" in answer.json()["detail"]
    later = company.token(iat=int(time.time()) + 1)
    assert names(select(later))


def test_an_opaque_token_is_introspected_with_quivers_credentials(company, alice):
    seen: list[tuple[dict[str, str], str]] = []

    def introspect(form: dict[str, str], authorization: str) -> dict[str, Any]:
        seen.append((form, authorization))
        if form["token"] != "opaque-good":
            return {"active": False}
        now = int(time.time())
        return {
            "active": True,
            "iss": company.issuer,
            "aud": AUDIENCE,
            "preferred_username": "alice",
            "client_id": "connector",
            "scope": "api",
            "iat": now,
            "exp": now + 300,
        }

    company.documents.posts["/introspect"] = introspect
    assert names(select("opaque-good"))
    assert select("opaque-bad").status_code == 401
    form, authorization = seen[0]
    assert form["token_type_hint"] == "access_token"
    assert authorization.startswith("Basic ")
