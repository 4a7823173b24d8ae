"""Tokens of the company's authorization server (Okta, Entra ID, Keycloak...).

A JWT is verified against the server's JWKS (fetched again, at most once a minute,
for a key it does not hold); an opaque token is introspected (RFC 7662). Either way
the claims must name the issuer, the audience, an unexpired time and a scope of
Quiver's, and ``QUIVER_OAUTH_EXTERNAL_PERSON_CLAIM`` an active person. The token acts
for that person, its scopes narrowing what they hold now, never more.
The setup and rules: docs/how-to/company-authorization-server.md.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from config.env_oauth import ExternalServer
from identity.access import access_for, key_within
from identity.auth import key_problem
from oauth.choices import ENDPOINT_SCOPES
from oauth.fetch import FetchError, get_json, post_form
from oauth.roles import roles_held
from oauth.scopes import read_scope, token_scopes
from oauth.services.clients import external_client
from oauth.services.connections import Policy
from oauth.services.external import connection_for, revoked_since
from oauth.tokens import TokenInfo, TokenRefused, claims_problem

ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
REFETCH_S = 60
KEEP_S = 3600
AS_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"
CLIENT_CLAIMS = ("client_id", "azp", "cid", "appid")


class _Keys:
    """The server's JWKS, per process: fetched when missing, old, or lacking a
    key a token names (then at most once a minute)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.keys: KeySet | None = None
        self.fetched = 0.0

    def for_kid(self, server: ExternalServer, kid: str | None) -> KeySet:
        with self.lock:
            now = time.monotonic()
            stale = self.keys is None or now - self.fetched > KEEP_S
            missing = (
                kid is not None
                and self.keys is not None
                and not any(key.kid == kid for key in self.keys.keys)
            )
            if stale or (missing and now - self.fetched > REFETCH_S):
                self.keys = KeySet.import_key_set(_jwks(server))  # type: ignore[arg-type]
                self.fetched = now
            assert self.keys is not None
            return self.keys


KEYS = _Keys()


def _jwks(server: ExternalServer) -> dict[str, Any]:
    url = server.jwks_url or _jwks_url(server)
    try:
        document, _headers = get_json(url, public_only=False)
    except FetchError as exc:
        raise TokenRefused(f"token: the issuer's keys cannot be read ({exc})") from exc
    if not isinstance(document.get("keys"), list):
        raise TokenRefused("token: the issuer's JWKS holds no keys")
    return document


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: RFC 8414's well-known URL (the path
    after it), OpenID's (the path before it), and the latter form of RFC 8414's,
    which Okta also serves."""
    parts = urlsplit(issuer.rstrip("/"))
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path
    return [
        origin + AS_WELL_KNOWN + path,
        origin + path + OIDC_WELL_KNOWN,
        origin + path + AS_WELL_KNOWN,
    ]


def _jwks_url(server: ExternalServer) -> str:
    """``jwks_uri`` from the issuer's metadata (which must name the issuer)."""
    for url in dict.fromkeys(metadata_urls(server.issuer)):
        try:
            metadata, _headers = get_json(url, public_only=False)
        except FetchError:
            continue
        if metadata.get("issuer") == server.issuer and metadata.get("jwks_uri"):
            return str(metadata["jwks_uri"])
    raise TokenRefused("token: the issuer's metadata names no jwks_uri")


def read_external(
    token: str, header: dict[str, Any] | None, *, resource: str
) -> TokenInfo:
    """Check a token of the company's server; ``TokenRefused`` saying why not."""
    server = settings.QUIVER_OAUTH.external
    if server is None:
        raise TokenRefused("token: not one of this server's")
    if header is not None and header.get("alg") in ALGORITHMS:
        claims = _verified(server, token, header)
    elif server.introspection_url:
        claims = _introspected(server, token)
    else:
        raise TokenRefused("token: not a JWT of the issuer (and no introspection)")
    audience = server.audience or resource
    required = ("iss", "aud", "exp", "iat", server.person_claim)
    problem = claims_problem(
        claims, issuer=server.issuer, audiences=(audience,), required=required
    )
    if problem:
        raise TokenRefused(problem)
    return _acting(server, claims)


def _verified(
    server: ExternalServer, token: str, header: dict[str, Any]
) -> dict[str, Any]:
    keys = KEYS.for_kid(server, header.get("kid"))
    try:
        decoded = jwt.decode(token, keys, algorithms=ALGORITHMS)
    except (JoseError, ValueError) as exc:
        raise TokenRefused("token: its signature does not verify") from exc
    return dict(decoded.claims)


def _introspected(server: ExternalServer, token: str) -> dict[str, Any]:
    """RFC 7662: the server's word on an opaque token."""
    try:
        answer = post_form(
            server.introspection_url,
            {"token": token, "token_type_hint": "access_token"},
            auth=(server.client_id, server.client_secret),
        )
    except FetchError as exc:
        raise TokenRefused(f"token: introspection failed ({exc})") from exc
    if answer.get("active") is not True:
        raise TokenRefused("token: not active (introspection)")
    return answer


def _acting(server: ExternalServer, claims: dict[str, Any]) -> TokenInfo:
    scopes = token_scopes(claims)
    if not scopes & set(ENDPOINT_SCOPES):
        raise TokenRefused("token: its scope names neither mcp nor api")
    person = _person(str(claims.get(server.person_claim, "")))
    client_id = next(
        (str(claims[name]) for name in CLIENT_CLAIMS if claims.get(name)), ""
    )
    if not client_id:
        raise TokenRefused("token: names no client (client_id, azp)")
    policy, problem = _policy(person, scopes)
    if problem:
        raise TokenRefused(
            f"token: asks for more than {person.get_username()} holds ({problem})"
        )
    client = external_client(server.issuer, client_id)
    if revoked_since(client, person, int(claims["iat"])):
        raise TokenRefused("token: issued before its connection was revoked")
    connection = connection_for(client, person, policy, " ".join(sorted(scopes)))
    problem = key_problem(connection.principal)
    if problem:
        raise TokenRefused(
            f"token: the connection is {problem}", principal=connection.principal.user
        )
    return TokenInfo(connection.principal.user, connection, scopes, claims)


def _person(name: str) -> Any:
    person = (
        get_user_model()
        .objects.filter(username=name, is_active=True, api_client__isnull=True)
        .first()
        if name
        else None
    )
    if person is None:
        raise TokenRefused("token: names no active person of Quiver")
    return person


def _policy(person: Any, scopes: frozenset[str]) -> tuple[Policy, str]:
    """The token's scopes within the person's access now, and what it asks
    beyond that ('' when nothing)."""
    asked = read_scope(" ".join(sorted(scopes)))
    access = access_for(person)
    policy = Policy(
        catalogs=asked.catalogs if asked.catalogs is not None else access.catalogs,
        roles=asked.roles if asked.roles is not None else roles_held(access),
        allow_unsafe=asked.unsafe,
    )
    return policy, key_within(access, policy.grant())
