"""Quiver's access tokens: JWTs (RFC 9068, ``typ`` at+jwt, ES256) bound to the
resource they were issued for (RFC 8707: ``aud`` is the canonical /mcp URL).

A token names its issuer, audience, subject (the person's id), client, scope,
expiry, its own id (``jti``) and the family of tokens it belongs to (``sid``:
one authorization code and the refreshes that followed it). Checking one
(``read_own``) verifies the signature against the published keys, then every
claim with a bounded clock skew; the family, the connection and the person are
read on every request, so a revoked family, a revoked token, a revoked
connection or a person who lost access stops it at once."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from authlib.common.security import generate_token
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from django.conf import settings
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from audit.actors import Actor
from identity.auth import key_problem
from oauth.keys import ALGORITHM, current_key, signing_keys, verifying_keys
from oauth.models import Connection, RevokedAccessToken, TokenFamily

ACCESS_TOKEN_TYPE = "at+jwt"
REFRESH_TOKEN_CHARS = 48
REQUIRED = ("iss", "aud", "exp", "iat", "sub", "client_id", "jti", "sid")


@dataclass
class Grantee:
    """Whom tokens are issued to: a connection, within one family."""

    connection: Connection
    family: TokenFamily | None = None

    def get_user_id(self) -> str:
        return str(self.connection.person_id)


class AccessTokens(JWTBearerTokenGenerator):
    """authlib's RFC 9068 generator with Quiver's key, audience and family."""

    def __init__(self, issuer: str) -> None:
        super().__init__(
            issuer,
            alg=ALGORITHM,
            refresh_token_generator=lambda *_a, **_k: generate_token(
                REFRESH_TOKEN_CHARS
            ),
            expires_generator=lambda *_a, **_k: settings.QUIVER_OAUTH.access_token_s,
        )

    def get_jwks(self) -> KeySet:
        # One key in the set: joserfc names it in the header (``kid``).
        return KeySet([current_key()])

    def get_audiences(self, client: Any, user: Grantee, scope: str) -> str:
        assert isinstance(user, Grantee) and user.family is not None
        return user.family.resource

    def get_jti(self, client: Any, grant_type: str, user: Grantee, scope: str) -> str:
        return uuid.uuid4().hex

    def get_extra_claims(
        self, client: Any, grant_type: str, user: Grantee, scope: str
    ) -> dict[str, Any]:
        assert isinstance(user, Grantee) and user.family is not None
        return {"sid": str(user.family.id)}


class TokenRefused(Exception):
    """A bearer token refused (``invalid_token``). ``principal`` is the
    connection's service user when the token was signed by a key this server
    trusts (so the refusal can be recorded against it), else None."""

    def __init__(self, detail: str, *, principal: Any = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.principal = principal


@dataclass
class TokenInfo:
    """A token that passed every check: who acts, and what it may be used for."""

    user: Actor  # the connection's service user: access_for() bounds it
    connection: Connection
    scopes: frozenset[str]
    claims: dict[str, Any] = field(default_factory=dict)

    @property
    def token_id(self) -> str:
        return str(self.claims.get("jti", ""))


def header_of(token: str) -> dict[str, Any] | None:
    """The JOSE header of a compact JWS, read without trusting it; None for
    anything that is not one."""
    if token.count(".") != 2:
        return None
    try:
        header = jws.extract_compact(token.encode("ascii")).headers()
    except (JoseError, ValueError, UnicodeEncodeError):
        return None
    return header if isinstance(header, dict) else None


def is_own(header: dict[str, Any]) -> bool:
    """Whether a token's header names (by ``kid``) a key this server signs with."""
    return header.get("kid") in {key.kid for key in signing_keys()}


def read_own(token: str, *, issuer: str, resource: str) -> TokenInfo:
    """Check a token this server issued; ``TokenRefused`` saying why not."""
    try:
        decoded = jwt.decode(token, verifying_keys(), algorithms=[ALGORITHM])
    except (JoseError, ValueError) as exc:
        raise TokenRefused("token: its signature does not verify") from exc
    claims = dict(decoded.claims)
    connection = _connection_of(claims)
    principal = connection.principal.user if connection is not None else None
    if decoded.header.get("typ") != ACCESS_TOKEN_TYPE:
        raise TokenRefused("token: not an access token (typ)", principal=principal)
    problem = claims_problem(claims, issuer=issuer, audiences=(resource,))
    if problem:
        raise TokenRefused(problem, principal=principal)
    if connection is None:
        raise TokenRefused("token: its grant is unknown")
    problem = _grant_problem(connection, claims)
    if problem:
        raise TokenRefused(problem, principal=principal)
    return TokenInfo(principal, connection, scopes_of(claims), claims)


def claims_problem(
    claims: dict[str, Any],
    *,
    issuer: str,
    audiences: tuple[str, ...],
    required: tuple[str, ...] = REQUIRED,
) -> str:
    """'' when the registered claims hold (issuer, audience, expiry and
    not-before within the allowed clock skew), else "token: why"."""
    essential: dict[str, Any] = {name: {"essential": True} for name in required}
    registry = jwt.JWTClaimsRegistry(
        leeway=settings.QUIVER_OAUTH.clock_skew_s, **essential
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        return f"token: {exc.description or exc.error}"
    if claims.get("iss") != issuer:
        return "token: issued by another authorization server (iss)"
    audience = claims.get("aud")
    given = audience if isinstance(audience, list) else [audience]
    if not any(item in audiences for item in given):
        return "token: issued for another resource (aud)"
    return ""


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    value = claims.get("scope")
    return frozenset(value.split()) if isinstance(value, str) else frozenset()


def _connection_of(claims: dict[str, Any]) -> Connection | None:
    """The connection of the token's family, with what every check reads (one
    query)."""
    try:
        family_id = uuid.UUID(str(claims.get("sid", "")))
    except ValueError:
        return None
    family = (
        TokenFamily.objects.select_related(
            "connection__client",
            "connection__principal__user",
            "connection__principal__owner",
            "connection__principal__person",
        )
        .filter(pk=family_id)
        .first()
    )
    if family is None:
        return None
    connection = family.connection
    connection._family = family  # type: ignore[attr-defined]
    return connection


def _grant_problem(connection: Connection, claims: dict[str, Any]) -> str:
    family: TokenFamily = connection._family  # type: ignore[attr-defined]
    if family.revoked is not None:
        return "token: revoked (its grant was revoked)"
    if RevokedAccessToken.objects.filter(jti=str(claims["jti"])).exists():
        return "token: revoked"
    if connection.revoked is not None:
        return "token: the connection was revoked"
    if claims.get("client_id") != connection.client.client_id:
        return "token: issued to another client (client_id)"
    if claims.get("sub") != str(connection.person_id):
        return "token: issued for another person (sub)"
    problem = key_problem(connection.principal)
    return f"token: the connection is {problem}" if problem else ""
