"""``Authorization: Bearer`` for the REST API and /mcp: an API key, or an OAuth
access token (Quiver's own, or the company authorization server's).

A key goes to ``identity.auth.ApiKeyAuthentication`` unchanged. A token is
checked for its issuer, audience, expiry (bounded skew), grant and scope on
every request (``oauth.tokens``, ``oauth.external``); the request's user is its
connection's service user, whose access is the consent within the person's
access now. A token's scope must name where it is used: ``mcp`` for /mcp,
``api`` for the REST API (403 ``insufficient_scope`` otherwise). A refused token
this server can tell the owner of is an ``oauth_refused`` row; any other
bearer that is no key and no token is a guess, and costs its address as an
unknown key does. Tokens are taken from the header only, never from a URL."""

from __future__ import annotations

from contextlib import suppress
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from config.http import request_id
from config.ratelimit import penalize_unknown_key
from identity.auth import ApiKeyAuthentication
from identity.models import ApiClient
from oauth.acting import TOKEN_ID
from oauth.choices import SCOPE_API
from oauth.external import read_external
from oauth.metadata import issuer_url, resource_metadata_url, resource_url
from oauth.services.connections import client_record
from oauth.services.refusals import NOT_RECORDED, NotRecorded, record_refusal
from oauth.tokens import TokenInfo, TokenRefused, header_of, is_own, read_own

KEY_PREFIX = "qv_"
LAST_USED_EVERY = timedelta(minutes=1)
NOT_A_TOKEN = "Authorization: not a Quiver API key or a valid access token"


class InvalidToken(exceptions.AuthenticationFailed):
    """401 ``invalid_token``."""


class InsufficientScope(exceptions.PermissionDenied):
    """403 ``insufficient_scope``: a valid token whose scope does not name this."""

    def __init__(self, needed: str) -> None:
        super().__init__(f"scope: this token's scope does not include {needed!r}")
        self.needed = needed


class RefusalNotRecorded(exceptions.APIException):
    status_code = 503
    default_code = "unavailable"
    default_detail = NOT_RECORDED


def bearer_of(request: Any) -> str | None:
    """The bearer credential of the request's Authorization header, if any."""
    header = authentication.get_authorization_header(request).decode(errors="ignore")
    if not header.startswith("Bearer "):
        return None
    return header[len("Bearer ") :].strip()


def authenticate_bearer(request: Any, *, needed: str) -> Any:
    """The user a bearer key or token acts as (None: no bearer was sent); raises
    ``InvalidToken``, ``InsufficientScope``, ``RefusalNotRecorded`` or the key
    authentication's own refusals."""
    token = bearer_of(request)
    if token is None:
        return None
    if token.startswith(KEY_PREFIX):
        found = ApiKeyAuthentication().authenticate(request)
        return None if found is None else found[0]
    return token_user(request, token, needed=needed).user


def token_user(request: Any, token: str, *, needed: str) -> TokenInfo:
    """A token that passed every check, its user marked with the token's id."""
    try:
        info = _read(request, token)
    except TokenRefused as refused:
        if refused.principal is None:
            penalize_unknown_key(request)
        else:
            _record(request, refused.principal, "invalid_token", refused.detail)
        raise InvalidToken(f"Authorization: {refused.detail}") from refused
    if needed not in info.scopes:
        _record(request, info.user, "insufficient_scope", f"scope: {needed} needed")
        raise InsufficientScope(needed)
    setattr(info.user, TOKEN_ID, info.token_id)
    _touch(info.connection.principal)
    return info


def _read(request: Any, token: str) -> TokenInfo:
    header = header_of(token)
    oauth = settings.QUIVER_OAUTH
    if header is not None and oauth.server and is_own(header):
        return read_own(
            token, issuer=issuer_url(request), resource=resource_url(request)
        )
    if oauth.external is not None:
        return read_external(token, header, resource=resource_url(request))
    raise TokenRefused(NOT_A_TOKEN.removeprefix("Authorization: "))


def _record(request: Any, principal: Any, error: str, detail: str) -> None:
    connection = getattr(
        getattr(principal, "api_client", None), "oauth_connection", None
    )
    client = client_record(connection.client) if connection is not None else None
    try:
        record_refusal(
            error,
            detail,
            actor=principal,
            where=request.path,
            request_id=request_id(request),
            client=client,
        )
    except NotRecorded as exc:
        raise RefusalNotRecorded() from exc


def _touch(principal: ApiClient) -> None:
    """Record use at most once a minute, as keys do."""
    now = timezone.now()
    if principal.last_used is None or now - principal.last_used > LAST_USED_EVERY:
        ApiClient.objects.filter(pk=principal.pk).update(last_used=now)


class BearerAuthentication(authentication.BaseAuthentication):
    """The REST API's bearer authentication: a key, or a token whose scope
    names ``api``."""

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        token = bearer_of(request)
        if token is None:
            return None
        if token.startswith(KEY_PREFIX):
            return ApiKeyAuthentication().authenticate(request)
        info = token_user(request, token, needed=SCOPE_API)
        return info.user, info

    def authenticate_header(self, request: Request) -> str:
        return www_authenticate(request)


def www_authenticate(request: Any, *, error: str = "", scope: str = "") -> str:
    """The 401's challenge (RFC 6750, RFC 9728): where the resource's metadata
    is, and, for a refused token, the error and the scope needed."""
    parts = ['Bearer realm="quiver"']
    with suppress(DisallowedHost):  # a Host Django refuses: no metadata to name
        parts.append(f'resource_metadata="{resource_metadata_url(request)}"')
    if error:
        parts.append(f'error="{error}"')
    if scope:
        parts.append(f'scope="{scope}"')
    return ", ".join(parts)
