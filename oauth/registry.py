"""Which client a ``client_id`` names, and whether its metadata may be used.

A ``client_id`` is either one Quiver gave at registration (RFC 7591), or the
https URL of the client's metadata document (the MCP specification's client ID
metadata documents): fetched through ``oauth.fetch`` (public addresses only),
kept for the time its ``Cache-Control`` says (between 1 minute and 1 day, 10
minutes without one), and checked like a registration, with its own
``client_id`` equal to its URL. Either way a client is public (no secret:
``token_endpoint_auth_method`` is ``none``), uses the code flow only, and names
redirect URIs that are https, http on a loopback address (RFC 8252, for a
client on the person's machine) or a private-use scheme (``com.example.app:/``);
a redirect is matched exactly, character for character."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc7591 import ClientMetadataClaims
from django.conf import settings
from django.utils import timezone
from joserfc.errors import JoseError

from oauth.choices import ClientKind
from oauth.fetch import FetchError, get_json
from oauth.models import OAuthClient
from oauth.scopes import scope_problem
from oauth.services.clients import save_document_client

LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
PRIVATE_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+$")
DOCUMENT_TTL_S = (60, 600, 86_400)  # at least, without Cache-Control, at most
MAX_AGE = re.compile(r"max-age=(\d+)")
REDIRECT_URIS = 20
CLIENT_ID_CHARS = 2000
SERVER_METADATA = {
    "response_types_supported": ["code"],
    "grant_types_supported": ["authorization_code", "refresh_token"],
    "token_endpoint_auth_methods_supported": ["none"],
}


class ClientProblem(ValueError):
    """Client metadata (registered or fetched) that cannot be used: why."""


def redirect_problem(uri: Any) -> str:
    """'' when ``uri`` may be a redirect URI, else why not."""
    if not isinstance(uri, str) or not uri or len(uri) > CLIENT_ID_CHARS:
        return "redirect_uris: each is a URI of at most 2000 characters"
    parts = urlsplit(uri)
    if parts.fragment or "#" in uri:
        return f"redirect_uris: {uri[:80]!r} has a fragment"
    if parts.scheme == "https" and parts.hostname:
        return ""
    if parts.scheme == "http" and parts.hostname in LOOPBACK:
        return ""
    if PRIVATE_SCHEME.match(parts.scheme) and not parts.netloc:
        return ""
    return (
        f"redirect_uris: {uri[:80]!r} must be https, http on a loopback address "
        "(127.0.0.1, [::1], localhost) or a private-use scheme (com.example.app:/...)"
    )


def checked_metadata(data: dict[str, Any]) -> dict[str, Any]:
    """RFC 7591 metadata checked by authlib's claims and Quiver's rules (public
    clients, the code flow, redirect URIs, scopes); ``ClientProblem`` names the
    first thing wrong."""
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > REDIRECT_URIS:
        raise ClientProblem(f"redirect_uris: one to {REDIRECT_URIS} URIs")
    for uri in uris:
        problem = redirect_problem(uri)
        if problem:
            raise ClientProblem(problem)
    given = dict(data)
    given.setdefault("token_endpoint_auth_method", "none")
    options = ClientMetadataClaims.get_claims_options(SERVER_METADATA)
    claims = ClientMetadataClaims(given, {}, options, SERVER_METADATA)
    try:
        claims.validate()
    except JoseError as exc:
        raise ClientProblem(f"{exc.description or exc.error}") from exc
    metadata = claims.get_registered_claims()
    scope = metadata.get("scope")
    if scope is not None and (not isinstance(scope, str) or scope_problem(scope)):
        raise ClientProblem(scope_problem(str(scope)) or "scope: a string")
    return metadata


def is_document_id(client_id: str) -> bool:
    """Whether ``client_id`` is a metadata document's URL: https with a path
    (or http on a loopback address where development allows it)."""
    parts = urlsplit(client_id)
    if not parts.hostname or parts.path in ("", "/") or parts.query or parts.fragment:
        return False
    if parts.scheme == "https":
        return True
    oauth = settings.QUIVER_OAUTH
    return (
        parts.scheme == "http"
        and oauth.loopback_client_documents
        and parts.hostname in LOOPBACK
    )


def find_client(client_id: str) -> OAuthClient | None:
    """The client ``client_id`` names (a fresh copy of a document fetched when
    the kept one is stale); None for none; ``ClientProblem`` for a document
    that cannot be used."""
    if not client_id or len(client_id) > CLIENT_ID_CHARS:
        return None
    found = OAuthClient.objects.filter(client_id=client_id).first()
    if not settings.QUIVER_OAUTH.client_documents or not is_document_id(client_id):
        return found if found is None or found.kind != ClientKind.DOCUMENT else None
    if found is not None and found.fresh_until and found.fresh_until > timezone.now():
        return found
    return _fetched(client_id)


def _fetched(client_id: str) -> OAuthClient:
    try:
        document, headers = get_json(client_id, public_only=True)
    except FetchError as exc:
        raise ClientProblem(f"client_id: its metadata document: {exc}") from exc
    if document.get("client_id") != client_id:
        raise ClientProblem(
            "client_id: the metadata document's client_id is not its own URL"
        )
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise ClientProblem("client_id: a metadata document holds no secret")
    metadata = checked_metadata({k: v for k, v in document.items() if k != "client_id"})
    ttl = timedelta(seconds=_ttl(headers.get("cache-control", "")))
    host = urlsplit(client_id).hostname or "client"
    return save_document_client(
        client_id, metadata, fallback_name=host, fresh_until=timezone.now() + ttl
    )


def _ttl(cache_control: str) -> int:
    low, default, high = DOCUMENT_TTL_S
    if "no-store" in cache_control or "no-cache" in cache_control:
        return low
    found = MAX_AGE.search(cache_control)
    return default if found is None else max(low, min(high, int(found.group(1))))
