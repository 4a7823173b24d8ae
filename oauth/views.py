"""OAuth's HTTP endpoints: the metadata documents, the JWKS, and the
authorization server's endpoints (authorize, token, register, revoke).

The machine endpoints answer JSON only; they take no secret in a URL (a query
string on token, registration or revocation is refused), are not cached
(``Cache-Control: no-store``) and need no CSRF token (they are called by clients,
never by a page: no cookie authenticates them). Metadata and keys are public,
so any origin may read them. The authorization endpoint is a console page for
a signed-in person (oauth.consent)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import wraps
from typing import Any

from authlib.oauth2 import OAuth2Error
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods
from rest_framework.exceptions import Throttled

from config import jsonparse
from config.errors import json_reads
from config.http import client_address
from config.ratelimit import charge, penalize_unknown_key
from config.retries import retry_body, retry_headers
from oauth import consent
from oauth.keys import public_jwks
from oauth.metadata import authorization_server_metadata, protected_resource_metadata
from oauth.server import Found, QuiverServer
from oauth.services.refusals import NOT_RECORDED, NotRecorded

View = Callable[..., HttpResponse]
REGISTRATIONS_PER_MINUTE = 10
PUBLIC = {"Access-Control-Allow-Origin": "*", "Cache-Control": "public, max-age=300"}


def _json(
    body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> JsonResponse:
    response = JsonResponse(body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _error(
    status: int, error: str, detail: str, retry_after: int | None = None
) -> JsonResponse:
    body: dict[str, Any] = {"error": error, "error_description": detail}
    if status == 429 or status >= 500:
        body = retry_body(body, retry_after)
    response = _json(body, status, {"Cache-Control": "no-store"})
    for name, value in retry_headers(retry_after).items():
        response[name] = value
    return response


def _slow_down(exc: Throttled) -> JsonResponse:
    """A throttled request's 429, with when to try again (a whole second at least)."""
    wait = max(1, math.ceil(getattr(exc, "wait", None) or 1))
    return _error(429, "slow_down", str(exc.detail), wait)


def server_on(view: View) -> View:
    """404 (JSON) while Quiver is not an authorization server."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.QUIVER_OAUTH.server:
            return _error(
                404, "not_found", "oauth: Quiver is not an authorization server here"
            )
        return view(request, *args, **kwargs)

    return wrapped


def machine_endpoint(view: View) -> View:
    """POST only, no query string, no CSRF; the OAuth errors authlib raises
    outside a grant (a request over plain http to a non-loopback host) are
    JSON; a refusal whose audit row cannot be written is a 503. The method is
    held where ``require_http_methods`` holds its own (the wrapper's closure),
    so whoever reads a view's methods reads these alike."""
    request_method_list = ["POST"]

    @wraps(view)
    def wrapped(request: HttpRequest) -> HttpResponse:
        if request.method not in request_method_list:
            response = _error(405, "method_not_allowed", "method: POST only")
            response["Allow"] = "POST"
            return response
        if request.META.get("QUERY_STRING"):
            return _error(
                400,
                "invalid_request",
                "query: parameters go in the body, never in the URL",
            )
        try:
            return view(request)
        except NotRecorded:
            return _error(503, "unavailable", NOT_RECORDED, retry_after=5)
        except OAuth2Error as error:
            return _error(400, str(error.error), str(error.description or error.error))

    return csrf_exempt(wrapped)


@json_reads
def protected_resource(request: HttpRequest) -> JsonResponse:
    """RFC 9728: /mcp's metadata (also at the path-suffixed URL)."""
    return _json(protected_resource_metadata(request), headers=PUBLIC)


@json_reads
@server_on
def authorization_server(request: HttpRequest) -> JsonResponse:
    """RFC 8414: Quiver's authorization server's metadata."""
    try:
        document = authorization_server_metadata(request)
    except ValueError as exc:  # an issuer over plain http off loopback
        return _error(
            503, "misconfigured", f"oauth: {exc} (set QUIVER_HTTPS behind TLS)"
        )
    return _json(document, headers=PUBLIC)


@json_reads
@server_on
def jwks(request: HttpRequest) -> JsonResponse:
    return _json(public_jwks(), headers=PUBLIC)


@require_http_methods(["GET", "POST"])
@server_on
@login_required
def authorize(request: HttpRequest) -> HttpResponse:
    return consent.authorize(request)


@server_on
@machine_endpoint
def token(request: HttpRequest) -> HttpResponse:
    server = QuiverServer(request)
    response = server.create_token_response(request)
    return _guessed(request, server, response)


@server_on
@machine_endpoint
def revoke(request: HttpRequest) -> HttpResponse:
    server = QuiverServer(request)
    return server.create_endpoint_response("revocation", request)


@server_on
@machine_endpoint
def register(request: HttpRequest) -> HttpResponse:
    if not settings.QUIVER_OAUTH.dynamic_registration:
        return _error(
            403,
            "access_denied",
            "registration: closed here (use a client ID metadata document)",
        )
    try:
        charge(
            f"oauth-register:{client_address(request)}",
            REGISTRATIONS_PER_MINUTE,
            1,
            what="client registrations a minute from one address",
        )
    except Throttled as exc:
        return _slow_down(exc)
    try:
        body = jsonparse.loads(request.body or b"{}")
    except ValueError as exc:
        return _error(400, "invalid_client_metadata", f"body: not JSON ({exc})")
    server = QuiverServer(request, json_body=body)
    return server.create_endpoint_response("client_registration", request)


def _guessed(
    request: HttpRequest, server: QuiverServer, response: HttpResponse
) -> HttpResponse:
    """An unknown code or refresh token costs its address as an unknown key."""
    note: Found | None = getattr(server, "last_found", None)
    if note is None or not note.guessed:
        return response
    try:
        penalize_unknown_key(request)
    except Throttled as exc:
        return _slow_down(exc)
    return response
