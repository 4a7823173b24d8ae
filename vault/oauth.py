"""The exchanges with a source's authorization server, by authlib's OAuth 2.0
client on the guarded HTTP of ``vault.http``: the authorization URL (code flow,
PKCE S256, ``state``, the resource indicator of RFC 8707), the code exchange,
refresh (the resource named again) and revocation (RFC 7009). Every request to
the server names the ``client_id`` in its body, with Basic authentication too:
some servers (the MCP SDK's) look the client up by it.

Nothing here logs a code, a verifier or a token; an error names the server's
OAuth error code, never its description (it may quote what was sent)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from authlib.common.security import generate_token
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from authlib.oauth2.client import OAuth2Client
from django.utils import timezone

from config.aio import run_sync
from vault import crypto
from vault.http import client_options
from vault.models import SourceAuthorization

OAUTH_ERRORS = frozenset(
    {
        *("invalid_request", "invalid_client", "invalid_grant", "invalid_scope"),
        *("unauthorized_client", "unsupported_grant_type", "invalid_target"),
        *("access_denied", "server_error", "temporarily_unavailable"),
        "unsupported_response_type",
    }
)
# RFC 7636: 43 to 128 characters; authlib's generate_token(48) gives 48.
VERIFIER_CHARS = 64


class TokenRefused(Exception):
    """The authorization server answered with an OAuth error; ``error`` is its
    code (one of OAuth's, else "other")."""

    def __init__(self, error: str) -> None:
        self.error = error if error in OAUTH_ERRORS else "other"
        super().__init__(self.error)


class ServerDown(Exception):
    """The authorization server could not be reached or answered no token."""


@dataclass(frozen=True)
class Client:
    """Quiver's client at one source's authorization server."""

    client_id: str
    client_secret: str
    method: str
    redirect_uri: str
    scope: str
    resource: str
    metadata: dict[str, Any]

    @classmethod
    def of(cls, auth: SourceAuthorization) -> Client:
        secret = crypto.decrypt(auth.client_secret_encrypted, crypto.CLIENT_SECRETS)
        return cls(
            client_id=auth.client_id,
            client_secret=secret,
            method=auth.token_endpoint_auth_method or "none",
            redirect_uri=auth.redirect_uri,
            scope=auth.scope,
            resource=auth.resource,
            metadata=dict(auth.metadata),
        )

    def named(self) -> dict[str, str]:
        """The client id for the body where the authentication method leaves
        it out (Basic puts it in the header only)."""
        if self.method == "client_secret_basic":
            return {"client_id": self.client_id}
        return {}

    def _async(self) -> AsyncOAuth2Client:
        return AsyncOAuth2Client(
            client_id=self.client_id,
            client_secret=self.client_secret or None,
            token_endpoint_auth_method=self.method,
            revocation_endpoint_auth_method=self.method,
            **client_options(),
        )


@dataclass(frozen=True)
class Tokens:
    access: str
    refresh: str
    expires: datetime | None
    scope: str


def new_verifier() -> str:
    return generate_token(VERIFIER_CHARS)


def authorization_url(client: Client, state: str, verifier: str) -> str:
    """Where the person's browser goes to authorize Quiver (no request made)."""
    oauth = OAuth2Client(
        None,
        client_id=client.client_id,
        scope=client.scope or None,
        redirect_uri=client.redirect_uri,
        code_challenge_method="S256",
    )
    url, _ = oauth.create_authorization_url(
        client.metadata["authorization_endpoint"],
        state=state,
        code_verifier=verifier,
        resource=client.resource,
    )
    return str(url)


def exchange_code(client: Client, code: str, verifier: str) -> Tokens:
    """The tokens a code is worth (the code, its verifier, Quiver's callback and
    the resource sent to the token endpoint the source's metadata names)."""

    async def exchange() -> dict[str, Any]:
        async with client._async() as oauth:
            return dict(
                await oauth.fetch_token(
                    client.metadata["token_endpoint"],
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=verifier,
                    redirect_uri=client.redirect_uri,
                    resource=client.resource,
                    **client.named(),
                )
            )

    return _tokens(_exchanged(exchange), previous_refresh="")


def refresh(client: Client, refresh_token: str) -> Tokens:
    """New tokens for a refresh token (the server may rotate it)."""

    async def exchange() -> dict[str, Any]:
        async with client._async() as oauth:
            return dict(
                await oauth.refresh_token(
                    client.metadata["token_endpoint"],
                    refresh_token=refresh_token,
                    resource=client.resource,
                    **client.named(),
                )
            )

    return _tokens(_exchanged(exchange), previous_refresh=refresh_token)


def revoke(client: Client, token: str, hint: str) -> bool:
    """Ask the server to revoke ``token`` (RFC 7009), if it has a revocation
    endpoint; whether it said it did. Never raises: a disconnect goes on."""
    url = client.metadata.get("revocation_endpoint")
    if not url or not token:
        return False

    async def ask() -> bool:
        async with client._async() as oauth:
            answer = await oauth.revoke_token(
                url,
                token=token,
                token_type_hint=hint,
                body=urlencode(client.named()),
            )
            return bool(answer.status_code == 200)

    try:
        return run_sync(ask())
    except Exception:  # the server is down or refused: the token is dropped anyway
        return False


def _exchanged(work: Any) -> dict[str, Any]:
    try:
        return run_sync(work())  # type: ignore[no-any-return]
    except OAuthError as exc:
        raise TokenRefused(str(exc.error)) from None
    except Exception as exc:  # an outage, an answer over the cap, no JSON
        raise ServerDown(type(exc).__name__) from None


def _tokens(answer: dict[str, Any], *, previous_refresh: str) -> Tokens:
    access = answer.get("access_token")
    kind = str(answer.get("token_type") or "bearer").lower()
    if not isinstance(access, str) or not access or kind != "bearer":
        raise ServerDown("the token endpoint answered no bearer access token")
    expires_in = answer.get("expires_in")
    expires = None
    if isinstance(expires_in, int | float) and expires_in > 0:
        expires = timezone.now() + timedelta(seconds=float(expires_in))
    refresh_token = answer.get("refresh_token")
    return Tokens(
        access=access,
        refresh=refresh_token if isinstance(refresh_token, str) else previous_refresh,
        expires=expires,
        scope=str(answer.get("scope") or "")[:1000],
    )
