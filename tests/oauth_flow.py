"""OAuth helpers for tests: a client registered, a connection approved, tokens
issued as the token endpoint issues them (oauth.tokens' generator and Quiver's
signing key), and PKCE values. Tokens made wrong on purpose (expired, for
another resource...) are signed with the real key: the checks after the
signature are what such a test reaches."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import uuid
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import KeySet

from oauth.choices import ClientKind
from oauth.keys import current_key
from oauth.models import Connection, OAuthClient, TokenFamily
from oauth.services.connections import Policy, approve_connection
from oauth.services.grants import save_refresh_token
from oauth.tokens import AccessTokens, Grantee

REDIRECT = "http://127.0.0.1:8976/callback"


def pkce() -> tuple[str, str]:
    """(code_verifier, its S256 code_challenge)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


def make_oauth_client(
    name: str = "Probe", redirect_uris: tuple[str, ...] = (REDIRECT,)
) -> OAuthClient:
    return OAuthClient.objects.create(
        client_id=f"client-{uuid.uuid4().hex[:12]}",
        kind=ClientKind.DYNAMIC,
        name=name,
        redirect_uris=list(redirect_uris),
    )


def connect(
    person: Any,
    *,
    client: OAuthClient | None = None,
    catalogs: tuple[str, ...] | None = None,
    roles: tuple[str, ...] = (),
    unsafe: bool = False,
    scope: str = "mcp api",
) -> Connection:
    """A person's approval of a client, as the consent page makes it."""
    policy = Policy(catalogs=catalogs, roles=roles, allow_unsafe=unsafe)
    return approve_connection(
        client or make_oauth_client(), person=person, policy=policy, scope=scope
    )


def issue(
    connection: Connection, origin: str, scope: str = "mcp api"
) -> dict[str, str]:
    """An access and a refresh token for ``connection``, as the token endpoint
    of ``origin`` issues them."""
    family = TokenFamily.objects.create(
        connection=connection, scope=scope, resource=f"{origin}/mcp"
    )
    generator = AccessTokens(origin)
    grantee = Grantee(connection, family)
    token = generator.generate(
        grant_type="authorization_code",
        client=connection.client,
        user=grantee,
        scope=scope,
        include_refresh_token=True,
    )
    save_refresh_token(token["refresh_token"], family)
    return {
        "access_token": token["access_token"],
        "refresh_token": token["refresh_token"],
    }


def forge(connection: Connection, origin: str, **claims: Any) -> str:
    """A token signed with Quiver's key whose claims are the issued ones with
    ``claims`` changed (None drops a claim; ``typ`` is the header's)."""
    typ = claims.pop("typ", "at+jwt")
    family = TokenFamily.objects.create(
        connection=connection, scope="mcp api", resource=f"{origin}/mcp"
    )
    now = int(time.time())
    body: dict[str, Any] = {
        "iss": origin,
        "aud": f"{origin}/mcp",
        "sub": str(connection.person_id),
        "client_id": connection.client.client_id,
        "scope": "mcp api",
        "iat": now,
        "exp": now + 600,
        "jti": uuid.uuid4().hex,
        "sid": str(family.id),
    }
    for name, value in claims.items():
        if value is None:
            body.pop(name, None)
        else:
            body[name] = value
    header = {"alg": "ES256", "typ": typ}
    return jwt.encode(header, body, KeySet([current_key()]))


def authorize_query(
    client_id: str,
    challenge: str,
    *,
    redirect_uri: str = REDIRECT,
    state: str = "s-123",
    scope: str = "mcp",
    **extra: str,
) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "scope": scope,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **extra,
    }
    return "/oauth/authorize?" + urlencode({k: v for k, v in params.items() if v})


def redirected(location: str) -> dict[str, str]:
    """The query parameters of a redirect back to the client."""
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def agent_token(
    origin: str, username: str, *, catalogs: tuple[str, ...] | None = None
) -> str:
    """An access token of ``origin`` for a new person holding ``catalogs`` (None:
    every one) and no role, approved for the same: the OAuth counterpart of an
    agent key with those catalogs, for re-running a key's tests with a token."""
    from identity.models import UserCatalogAccess
    from tests.factories import make_user

    person = make_user(username)
    if catalogs is not None:
        UserCatalogAccess.objects.create(user=person, catalogs=list(catalogs))
    return issue(connect(person, catalogs=catalogs), origin)["access_token"]
