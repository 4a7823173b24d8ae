"""Where Quiver's OAuth lives and what it says about itself: the resource (the
canonical /mcp URL), the issuer, and their metadata documents (RFC 9728 for the
protected resource, RFC 8414 for the authorization server).

Both URLs come from settings (``QUIVER_OAUTH_RESOURCE``, ``QUIVER_OAUTH_ISSUER``)
or, unset, from the request's own origin: its scheme and a Host that
``ALLOWED_HOSTS`` allows (Django refuses any other), so ``make run`` works on
http://127.0.0.1:8000 with nothing set. A token names the resource it was issued
for; one issued through another host name is another resource's.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2 import rfc8414, rfc9207
from django.conf import settings
from django.http import HttpRequest
from mcp.shared.auth import ProtectedResourceMetadata

from oauth.choices import ENDPOINT_SCOPES
from oauth.keys import ALGORITHM

PRM_PATH = "/.well-known/oauth-protected-resource"
AS_PATH = "/.well-known/oauth-authorization-server"
AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"
REGISTER_PATH = "/oauth/register"
REVOKE_PATH = "/oauth/revoke"
JWKS_PATH = "/oauth/jwks.json"
DOCS = "https://quiver.readthedocs.io/how-to/oauth/"


def origin(request: HttpRequest) -> str:
    """``scheme://host[:port]`` of the request (an allowed Host only)."""
    return f"{request.scheme}://{request.get_host()}"


def resource_url(request: HttpRequest) -> str:
    """The canonical URL of /mcp: what tokens are issued for (their ``aud``)."""
    return settings.QUIVER_OAUTH.resource or f"{origin(request)}/mcp"


def issuer_url(request: HttpRequest) -> str:
    """Quiver's own authorization server's issuer identifier."""
    return settings.QUIVER_OAUTH.issuer or origin(request)


def resource_metadata_url(request: HttpRequest) -> str:
    """Where the resource's metadata is: the path-suffixed well-known URL."""
    parts = urlsplit(resource_url(request))
    return f"{parts.scheme}://{parts.netloc}{PRM_PATH}{parts.path}"


def authorization_servers(request: HttpRequest) -> list[str]:
    """The issuers whose tokens /mcp accepts, Quiver's own first when it is one."""
    servers = [issuer_url(request)] if settings.QUIVER_OAUTH.server else []
    external = settings.QUIVER_OAUTH.external
    if external is not None:
        servers.append(external.issuer)
    return servers


def protected_resource_metadata(request: HttpRequest) -> dict[str, Any]:
    """RFC 9728: the resource, its authorization servers and scopes."""
    document = ProtectedResourceMetadata(
        resource=resource_url(request),  # type: ignore[arg-type]
        authorization_servers=authorization_servers(request),  # type: ignore[arg-type]
        scopes_supported=list(ENDPOINT_SCOPES),
        bearer_methods_supported=["header"],
        resource_name="Quiver",
        resource_documentation=DOCS,  # type: ignore[arg-type]
    )
    return document.model_dump(mode="json", exclude_none=True)


def authorization_server_metadata(request: HttpRequest) -> dict[str, Any]:
    """RFC 8414 (with RFC 9207's ``iss`` and the MCP client ID metadata
    documents): authorization code with PKCE S256 only, public clients, no
    implicit flow, JWT access tokens signed with the keys at ``jwks_uri``."""
    issuer = issuer_url(request)
    oauth = settings.QUIVER_OAUTH
    document: dict[str, Any] = {
        "issuer": issuer,
        "authorization_endpoint": issuer + AUTHORIZE_PATH,
        "token_endpoint": issuer + TOKEN_PATH,
        "revocation_endpoint": issuer + REVOKE_PATH,
        "jwks_uri": issuer + JWKS_PATH,
        "scopes_supported": list(ENDPOINT_SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "client_id_metadata_document_supported": oauth.client_documents,
        "service_documentation": DOCS,
        "access_token_signing_alg_values_supported": [ALGORITHM],
    }
    if oauth.dynamic_registration:
        document["registration_endpoint"] = issuer + REGISTER_PATH
    checked = rfc8414.AuthorizationServerMetadata(document)
    checked.validate(metadata_classes=[rfc9207.AuthorizationServerMetadata])
    return document
