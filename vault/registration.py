"""Quiver as an OAuth client of a source's authorization server, in the order the
MCP authorization specification recommends:

1. a client ID metadata document, when the server supports them and Quiver's
   public URL is https: the client id is the URL of a document Quiver serves
   (``vault.views.client_document``), naming this source's callback;
2. dynamic client registration (RFC 7591) at the server's registration
   endpoint: a confidential client when the server takes a secret;
3. otherwise an admin registers Quiver at the server by hand and gives the
   client id and secret (``vault.services.set_client``).

Each source has its own client and its own callback (``/upstream-accounts/callback/
<source id>/``), so an answer meant for one authorization server can never be
taken for another's (a mix-up)."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.client.auth import OAuthRegistrationError
from mcp.client.auth.oauth2 import check_registration_usable
from mcp.client.auth.utils import (
    create_client_registration_request,
    handle_registration_response,
    is_valid_client_metadata_url,
    should_use_client_metadata_url,
)
from mcp.shared.auth import OAuthClientMetadata, OAuthMetadata
from pydantic import AnyUrl, ValidationError

from config.aio import run_sync
from vault.discovery import GRANT_TYPES
from vault.http import guarded_client
from vault.models import Registration

CLIENT_NAME = "Quiver"
# The secret-based methods Quiver's token requests (authlib) apply; the server's
# first listed one is taken.
SECRET_METHODS = ("client_secret_basic", "client_secret_post")


class RegistrationFailed(ValueError):
    """The server refused to register Quiver, or registered it unusably."""


@dataclass(frozen=True)
class Client:
    registration: str
    client_id: str = ""
    client_secret: str = ""
    method: str = "none"


def document(document_url: str, redirect_uri: str, scope: str) -> dict[str, object]:
    """The client ID metadata document of one source's client."""
    found: dict[str, object] = {
        "client_id": document_url,
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": GRANT_TYPES,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    if scope:
        found["scope"] = scope
    return found


def register(
    metadata: dict[str, object], redirect_uri: str, document_url: str, scope: str
) -> Client:
    """How Quiver is this source's client: by its metadata document, by a new
    dynamic registration, or not yet (an admin must give a client id)."""
    server = OAuthMetadata.model_validate(metadata)
    usable = document_url if is_valid_client_metadata_url(document_url) else None
    if should_use_client_metadata_url(server, usable):
        return Client(Registration.METADATA_DOCUMENT, client_id=document_url)
    if server.registration_endpoint is None:
        return Client(Registration.NONE)
    return run_sync(_register(server, redirect_uri, scope))


async def _register(server: OAuthMetadata, redirect_uri: str, scope: str) -> Client:
    offered = server.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    method = next((m for m in offered if m in SECRET_METHODS), "none")
    try:
        asked = OAuthClientMetadata(
            redirect_uris=[AnyUrl(redirect_uri)],
            token_endpoint_auth_method=method,  # type: ignore[arg-type]
            grant_types=GRANT_TYPES,  # type: ignore[arg-type]
            response_types=["code"],
            client_name=CLIENT_NAME,
            scope=scope or None,
        )
    except ValidationError as exc:
        raise RegistrationFailed(f"registration: {exc.errors()[0]['msg']}") from exc
    request = create_client_registration_request(server, asked, str(server.issuer))
    async with guarded_client() as http:
        try:
            response = await http.send(request)
            info = await handle_registration_response(response)
            check_registration_usable(info)
        except OAuthRegistrationError as exc:
            raise RegistrationFailed(_short(str(exc))) from exc
        except Exception as exc:  # an outage or an answer over the cap
            raise RegistrationFailed(f"registration: {type(exc).__name__}") from exc
    if info.redirect_uris and AnyUrl(redirect_uri) not in info.redirect_uris:
        raise RegistrationFailed(
            "registration: the server registered other redirect URIs than Quiver's"
        )
    return Client(
        Registration.DYNAMIC,
        client_id=info.client_id,
        client_secret=info.client_secret or "",
        method=info.token_endpoint_auth_method or method,
    )


def _short(text: str) -> str:
    """The registration error's first line, without the server's body (it may
    quote what Quiver sent)."""
    return "registration: " + text.split("\n", 1)[0][:200]
