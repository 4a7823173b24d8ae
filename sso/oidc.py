"""The OpenID Connect exchange with the company's provider, by authlib's Django
client: the authorization code flow with PKCE (S256), state, nonce and the code
verifier kept in the session, the ID token's signature, issuer, audience, expiry and
nonce checked.

Quiver adds what the library leaves to its user, failing closed (the exact issuer,
https endpoints, asymmetric signatures only, Quiver's client id as the only audience,
the RFC 9207 ``iss``, a userinfo ``sub`` matching the ID token's), and nothing here
logs or returns a code, a token or a claim it did not check.
The rules: docs/explanation/security.md, Single sign-on.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import requests
from authlib.integrations.base_client.errors import MismatchingStateError, OAuthError
from authlib.integrations.django_client import DjangoIntegration, DjangoOAuth2App
from django.http import HttpRequest
from joserfc.errors import JoseError

from config.env import LOOPBACK_HOSTS, OidcProvider
from sso.mapping import claim_values

STATE_NAME = "quiver"
# How long a started sign-in may take at the provider.
PENDING_S = 600
METADATA_MAX_AGE_S = 3600
ASYMMETRIC_ALGORITHMS = (
    *("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
    *("ES256", "ES384", "ES512", "EdDSA", "Ed25519"),
)
ENDPOINTS = ("authorization_endpoint", "token_endpoint", "jwks_uri")
OAUTH_ERRORS = frozenset(
    {
        *("invalid_request", "unauthorized_client", "access_denied"),
        *("unsupported_response_type", "invalid_scope", "server_error"),
        *("temporarily_unavailable", "invalid_grant", "invalid_client"),
        *("login_required", "interaction_required", "consent_required"),
        "mismatching_state",
    }
)


class SignInFailed(Exception):
    """The provider's answer failed a check; ``reason`` says which as "field:
    rule" (never a code, a token or a value the caller sent)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ProviderDown(Exception):
    """The provider did not answer (or not with JSON): a 503 naming it."""


@dataclass(frozen=True)
class Verified:
    """A person the provider vouched for, every check passed."""

    issuer: str
    subject: str
    claims: dict[str, Any]


class ProviderApp(DjangoOAuth2App):
    """authlib's client for one provider, with Quiver's checks of its metadata."""

    def __init__(self, provider: OidcProvider) -> None:
        super().__init__(
            DjangoIntegration(STATE_NAME),
            name=STATE_NAME,
            client_id=provider.client_id,
            client_secret=provider.client_secret,
            server_metadata_url=discovery_url(provider.issuer),
            client_kwargs={
                "scope": " ".join(provider.scopes),
                "code_challenge_method": "S256",
                "token_endpoint_auth_method": "client_secret_basic",
                "default_timeout": provider.timeout_s,
            },
        )
        self.framework.expires_in = PENDING_S
        self.provider = provider
        self.server_metadata: dict[str, Any] = {}

    def load_server_metadata(self) -> dict[str, Any]:
        loaded = self.server_metadata.get("_loaded_at")
        if loaded is not None and time.time() - loaded > METADATA_MAX_AGE_S:
            self.server_metadata = {}
        if "_loaded_at" in self.server_metadata:
            return dict(self.server_metadata)
        try:
            metadata = super().load_server_metadata()
            checked = checked_metadata(metadata, self.provider)
        except Exception:
            self.server_metadata = {}
            raise
        self.server_metadata = checked
        return dict(checked)


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def checked_metadata(
    metadata: dict[str, Any], provider: OidcProvider
) -> dict[str, Any]:
    """The discovery document, if it names this issuer and safe endpoints, with
    the ID token algorithms narrowed to asymmetric ones."""
    if metadata.get("issuer") != provider.issuer:
        raise SignInFailed(
            "discovery: the provider names its issuer "
            f"{str(metadata.get('issuer'))[:200]!r}, not QUIVER_OIDC_ISSUER "
            f"{provider.issuer!r}; they must match exactly"
        )
    for name in (*ENDPOINTS, "userinfo_endpoint"):
        url = metadata.get(name)
        if url is None and name == "userinfo_endpoint":
            continue
        if not _safe_url(url):
            raise SignInFailed(f"discovery: {name} must be an https URL")
    announced = metadata.get("id_token_signing_alg_values_supported")
    algorithms = [
        alg
        for alg in (announced or ASYMMETRIC_ALGORITHMS)
        if alg in ASYMMETRIC_ALGORITHMS
    ]
    if not algorithms:
        raise SignInFailed(
            "discovery: the provider signs ID tokens with no asymmetric algorithm"
        )
    return {**metadata, "id_token_signing_alg_values_supported": algorithms}


def _safe_url(url: Any) -> bool:
    if not isinstance(url, str):
        return False
    parsed = urlparse(url)
    if parsed.scheme == "https":
        return bool(parsed.hostname)
    return parsed.scheme == "http" and parsed.hostname in LOOPBACK_HOSTS


_apps: dict[OidcProvider, ProviderApp] = {}
_apps_lock = threading.Lock()


def app_for(provider: OidcProvider) -> ProviderApp:
    """One client per provider settings per process (it caches the metadata)."""
    with _apps_lock:
        app = _apps.get(provider)
        if app is None:
            app = _apps[provider] = ProviderApp(provider)
        return app


def start(
    request: HttpRequest, provider: OidcProvider, redirect_uri: str
) -> tuple[str, str]:
    """The provider's authorization URL for a new sign-in and its state; the
    state, nonce and code verifier are kept in the session."""
    app = app_for(provider)
    try:
        found = app.create_authorization_url(redirect_uri)
    except (requests.RequestException, ValueError) as exc:
        raise ProviderDown(str(provider.issuer)) from exc
    app.save_authorize_data(request, redirect_uri=redirect_uri, **found)
    return str(found["url"]), str(found["state"])


def finish(request: HttpRequest, provider: OidcProvider) -> Verified:
    """The person the callback's code signs in, every check passed; else
    ``SignInFailed`` (or ``ProviderDown``). The state is spent either way."""
    returned = request.GET.get("iss")
    if returned is not None and returned != provider.issuer:
        raise SignInFailed("iss: the authorization response names another issuer")
    app = app_for(provider)
    try:
        token = app.authorize_access_token(
            request,
            claims_options=_claims_options(provider),
            leeway=provider.clock_skew_s,
        )
        claims = _claims(app, token, provider)
    except MismatchingStateError as exc:
        raise SignInFailed("state: no sign-in started with this state") from exc
    except OAuthError as exc:
        raise SignInFailed(f"provider: {_error_code(exc.error)}") from exc
    except JoseError as exc:
        raise SignInFailed(f"id_token: {_jose_reason(exc)}") from exc
    except (requests.RequestException, ValueError) as exc:
        raise ProviderDown(str(provider.issuer)) from exc
    return Verified(issuer=provider.issuer, subject=claims["sub"], claims=claims)


def _claims_options(provider: OidcProvider) -> dict[str, Any]:
    def only_quiver(_claims: Any, value: Any) -> bool:
        return value in (provider.client_id, [provider.client_id])

    return {
        "iss": {"essential": True, "value": provider.issuer},
        "sub": {"essential": True},
        "aud": {
            "essential": True,
            "value": provider.client_id,
            "validate": only_quiver,
        },
    }


def _claims(
    app: ProviderApp, token: dict[str, Any], provider: OidcProvider
) -> dict[str, Any]:
    """The ID token's claims, and the groups claim from userinfo when it lacks it."""
    checked = token.get("userinfo")
    if not checked:
        raise SignInFailed("id_token: the provider answered without one")
    claims = dict(checked)
    name = provider.groups_claim
    has_claim = name in claims or claim_values(claims, name)
    if has_claim or not app.load_server_metadata().get("userinfo_endpoint"):
        return claims
    extra = dict(app.userinfo(token=token))
    if extra.get("sub") != claims["sub"]:
        raise SignInFailed("userinfo: its sub is not the ID token's")
    return {**extra, **claims}


def _error_code(error: Any) -> str:
    """The provider's error code when it is one of OAuth's, else "other": the
    callback's URL is the caller's to write."""
    return str(error) if error in OAUTH_ERRORS else "other"


def _jose_reason(exc: JoseError) -> str:
    return f"{exc.error} ({exc.description})" if exc.description else str(exc.error)
