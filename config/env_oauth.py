"""OAuth's deploy-time settings (oauth/), read once at start-up into one value.

``/mcp`` is an OAuth 2.1 protected resource. Its tokens come from Quiver's own
authorization server (on by default, so ``make run`` needs no identity
provider), from the company's authorization server (``QUIVER_OAUTH_EXTERNAL_*``),
or from both. A URL is https, or http on a loopback address (a server on the
same machine, as the tests and ``make run`` are).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_str, env_url

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MCP_PATH = "/mcp"


@dataclass(frozen=True)
class ExternalServer:
    """The company's authorization server whose tokens /mcp accepts: JWTs
    checked against its JWKS, or opaque tokens it introspects (RFC 7662)."""

    issuer: str
    audience: str  # "" : the resource (the canonical /mcp URL)
    person_claim: str
    jwks_url: str  # "" : from its RFC 8414 (or OpenID) metadata
    introspection_url: str
    client_id: str
    client_secret: str


@dataclass(frozen=True)
class OAuthSettings:
    resource: str  # "" : the request's own origin (an allowed Host) + /mcp
    server: bool  # Quiver is an authorization server
    issuer: str  # "" : the request's own origin
    access_token_s: int
    refresh_token_s: int
    clock_skew_s: int
    dynamic_registration: bool
    client_documents: bool
    loopback_client_documents: bool
    signing_keys: str  # PEM private keys, the first signs; "" : from SECRET_KEY
    http_timeout_s: int
    external: ExternalServer | None


def https_or_loopback(name: str, url: str) -> str:
    """``url`` when it is https, or http on a loopback host; else stop start-up."""
    if not url:
        return url
    parsed = urlparse(url)
    if parsed.scheme == "http" and parsed.hostname not in LOOPBACK_HOSTS:
        raise ImproperlyConfigured(
            f"{name}: must be https (http only for 127.0.0.1 or localhost)"
        )
    if parsed.query or parsed.fragment:
        raise ImproperlyConfigured(f"{name}: no query or fragment")
    return url.rstrip("/") if parsed.path in ("", "/") else url


def _resource() -> str:
    resource = https_or_loopback(
        "QUIVER_OAUTH_RESOURCE", env_url("QUIVER_OAUTH_RESOURCE", ("https", "http"))
    )
    if resource and urlparse(resource).path != MCP_PATH:
        raise ImproperlyConfigured(
            "QUIVER_OAUTH_RESOURCE: the canonical URL of /mcp (https://host/mcp)"
        )
    return resource


def _external() -> ExternalServer | None:
    issuer = https_or_loopback(
        "QUIVER_OAUTH_EXTERNAL_ISSUER",
        env_url("QUIVER_OAUTH_EXTERNAL_ISSUER", ("https", "http")),
    )
    if not issuer:
        return None
    introspection = https_or_loopback(
        "QUIVER_OAUTH_EXTERNAL_INTROSPECTION_URL",
        env_url("QUIVER_OAUTH_EXTERNAL_INTROSPECTION_URL", ("https", "http")),
    )
    client_id = env_str("QUIVER_OAUTH_EXTERNAL_CLIENT_ID").strip()
    client_secret = env_str("QUIVER_OAUTH_EXTERNAL_CLIENT_SECRET").strip()
    if introspection and not (client_id and client_secret):
        raise ImproperlyConfigured(
            "QUIVER_OAUTH_EXTERNAL_CLIENT_ID, QUIVER_OAUTH_EXTERNAL_CLIENT_SECRET: "
            "must be set to introspect tokens"
        )
    return ExternalServer(
        issuer=issuer,
        audience=env_str("QUIVER_OAUTH_EXTERNAL_AUDIENCE").strip(),
        person_claim=env_str("QUIVER_OAUTH_EXTERNAL_PERSON_CLAIM", "sub").strip()
        or "sub",
        jwks_url=https_or_loopback(
            "QUIVER_OAUTH_EXTERNAL_JWKS_URL",
            env_url("QUIVER_OAUTH_EXTERNAL_JWKS_URL", ("https", "http")),
        ),
        introspection_url=introspection,
        client_id=client_id,
        client_secret=client_secret,
    )


def oauth_settings() -> OAuthSettings:
    """Every OAuth setting; a bad one stops start-up naming it."""
    external = _external()
    server = env_bool("QUIVER_OAUTH_SERVER", True)
    if not server and external is None:
        raise ImproperlyConfigured(
            "QUIVER_OAUTH_SERVER: false needs QUIVER_OAUTH_EXTERNAL_ISSUER, or no "
            "token could ever reach /mcp (API keys still would)"
        )
    return OAuthSettings(
        resource=_resource(),
        server=server,
        issuer=https_or_loopback(
            "QUIVER_OAUTH_ISSUER", env_url("QUIVER_OAUTH_ISSUER", ("https", "http"))
        ),
        access_token_s=env_int("QUIVER_OAUTH_ACCESS_TOKEN_SECONDS", 600, 30, 3600),
        refresh_token_s=env_int("QUIVER_OAUTH_REFRESH_TOKEN_DAYS", 30, 1, 365) * 86400,
        clock_skew_s=env_int("QUIVER_OAUTH_CLOCK_SKEW_SECONDS", 60, 0, 300),
        dynamic_registration=env_bool("QUIVER_OAUTH_DYNAMIC_REGISTRATION", True),
        client_documents=env_bool("QUIVER_OAUTH_CLIENT_DOCUMENTS", True),
        loopback_client_documents=env_bool(
            "QUIVER_OAUTH_LOOPBACK_CLIENT_DOCUMENTS", False
        ),
        signing_keys=env_str("QUIVER_OAUTH_SIGNING_KEYS").strip(),
        http_timeout_s=env_int("QUIVER_OAUTH_HTTP_TIMEOUT_SECONDS", 5, 1, 30),
        external=external,
    )
