"""How a source that asks for OAuth is authorized, found the way the MCP
authorization specification tells clients: the protected resource's metadata
(RFC 9728: the URL its ``401`` challenge names, then the well-known URLs), then
its authorization server's (RFC 8414, then OpenID discovery), with the MCP SDK's
discovery helpers and metadata models.

Quiver fails closed: the resource the metadata names must be the source's URL
or a parent of it (RFC 8707), the authorization server's metadata must name the
issuer it was fetched for exactly (RFC 8414 section 3.3), the server must offer
the authorization code with PKCE S256, and the source and every endpoint must be
https (http only on a loopback address): a token is never sent in clear."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.client.auth import OAuthFlowError
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from pydantic import ValidationError

from config.aio import run_sync
from vault.http import endpoint_problem, guarded_client

GRANT_TYPES = ["authorization_code", "refresh_token"]
ENDPOINTS = (
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "revocation_endpoint",
)


class DiscoveryFailed(ValueError):
    """The source's authorization cannot be followed; the message says why."""


@dataclass(frozen=True)
class Discovered:
    resource: str
    resource_metadata_url: str
    issuer: str
    metadata: dict[str, Any]
    scope: str


def discover(url: str, challenge: str) -> Discovered:
    """The authorization of the MCP server at ``url``, which answered ``401``
    with the ``WWW-Authenticate`` header ``challenge``."""
    problem = endpoint_problem("url", url)
    if problem:
        raise DiscoveryFailed(f"{problem}: a server that asks for OAuth gets tokens")
    return run_sync(_discover(url, challenge))


async def _discover(url: str, challenge: str) -> Discovered:
    said = httpx2.Response(401, headers={"WWW-Authenticate": challenge})
    hinted = extract_resource_metadata_from_www_auth(said)
    async with guarded_client() as http:
        resource, where = await _resource_metadata(http, url, hinted)
        issuer = str(resource.authorization_servers[0])
        problem = endpoint_problem("authorization_servers", issuer)
        if problem:
            raise DiscoveryFailed(f"resource metadata: {problem}")
        metadata = await _server_metadata(http, issuer)
    scope = get_client_metadata_scopes(
        extract_scope_from_www_auth(said), resource, metadata, GRANT_TYPES
    )
    return Discovered(
        resource=str(resource.resource),
        resource_metadata_url=where,
        issuer=issuer,
        metadata=metadata.model_dump(mode="json", exclude_none=True),
        scope=(scope or "")[:1000],
    )


async def _resource_metadata(
    http: httpx2.AsyncClient, url: str, hinted: str | None
) -> tuple[ProtectedResourceMetadata, str]:
    """The first resource metadata found (the challenge's URL first), checked
    to name the source's URL or a parent of it."""
    tried: list[str] = []
    for where in build_protected_resource_metadata_discovery_urls(hinted, url):
        problem = endpoint_problem("resource_metadata", where)
        if problem:
            raise DiscoveryFailed(problem)
        body = await _get(http, where)
        if body is None:
            tried.append(where)
            continue
        try:
            found = ProtectedResourceMetadata.model_validate_json(body)
        except ValidationError:
            tried.append(where)
            continue
        expected = resource_url_from_server_url(url)
        if not check_resource_allowed(expected, str(found.resource)):
            raise DiscoveryFailed(
                f"resource metadata: names the resource {str(found.resource)[:200]!r}, "
                f"which is not the source's url {expected!r} or a parent of it"
            )
        return found, where
    raise DiscoveryFailed(
        "resource metadata (RFC 9728): none found at " + ", ".join(tried[:3])
    )


async def _server_metadata(http: httpx2.AsyncClient, issuer: str) -> OAuthMetadata:
    """The authorization server's metadata (RFC 8414, then OpenID discovery),
    naming exactly ``issuer``, with safe endpoints and PKCE S256."""
    for where in build_oauth_authorization_server_metadata_discovery_urls(
        issuer, issuer
    ):
        body = await _get(http, where)
        if body is None:
            continue
        try:
            found = OAuthMetadata.model_validate_json(body)
        except ValidationError:
            continue
        try:
            validate_metadata_issuer(found, issuer)
        except OAuthFlowError as exc:
            raise DiscoveryFailed(
                f"authorization server metadata: names the issuer "
                f"{str(found.issuer)[:200]!r}, not {issuer!r}; they must match "
                "exactly (RFC 8414)"
            ) from exc
        _check_server(found)
        return found
    raise DiscoveryFailed(
        f"authorization server metadata (RFC 8414): none found for {issuer!r}"
    )


def _check_server(found: OAuthMetadata) -> None:
    for name in ENDPOINTS:
        value = getattr(found, name)
        if value is None and name in ("registration_endpoint", "revocation_endpoint"):
            continue
        problem = endpoint_problem(name, str(value) if value is not None else None)
        if problem:
            raise DiscoveryFailed(f"authorization server metadata: {problem}")
    if "S256" not in (found.code_challenge_methods_supported or []):
        raise DiscoveryFailed(
            "authorization server metadata: code_challenge_methods_supported "
            "must list S256 (PKCE)"
        )
    if "code" not in found.response_types_supported:
        raise DiscoveryFailed(
            "authorization server metadata: response_types_supported must list code"
        )


async def _get(http: httpx2.AsyncClient, url: str) -> bytes | None:
    """A document's body, None when it is not there (not a 200); an outage or
    an answer over the cap fails the discovery naming the URL."""
    try:
        response = await http.get(url)
    except (httpx2.HTTPError, httpx2.StreamError) as exc:
        raise DiscoveryFailed(f"{url}: {type(exc).__name__}: {exc}"[:500]) from exc
    if response.status_code != 200:
        return None
    return response.content
