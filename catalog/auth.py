"""Bearer-key authentication for API clients (who may do what: catalog.access)."""

from __future__ import annotations

import hmac
from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from catalog.models import ApiClient
from catalog.services.clients import hash_key, split_key
from config.ratelimit import penalize_unknown_key

LAST_USED_EVERY = timedelta(minutes=1)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer qv_...``; the request's user is the client's user.

    A key stops working when it is revoked, past its expiry, or when its service
    user or the person who made it is deactivated."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiClient] | None:
        header = authentication.get_authorization_header(request).decode(
            errors="ignore"
        )
        if not header.startswith(f"{self.keyword} "):
            return None
        parts = split_key(header[len(self.keyword) + 1 :].strip())
        if parts is None:
            raise exceptions.AuthenticationFailed("Authorization: malformed API key")
        prefix, key = parts
        client = (
            ApiClient.objects.select_related("user", "owner")
            .filter(key_prefix=prefix)
            .first()
        )
        if client is None or not hmac.compare_digest(client.key_hash, hash_key(key)):
            penalize_unknown_key(request)  # slow, then 429 after many per address
            raise exceptions.AuthenticationFailed("Authorization: unknown API key")
        problem = key_problem(client)
        if problem:
            raise exceptions.AuthenticationFailed(f"Authorization: API key {problem}")
        _touch(client)
        return client.user, client

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def key_problem(client: ApiClient) -> str:
    """Why a well-formed key of this client may not be used, or ''."""
    if client.revoked:
        return "revoked"
    if client.expires is not None and client.expires <= timezone.now():
        return "expired"
    if not client.user.is_active:
        return "deactivated"
    if client.owner is not None and not client.owner.is_active:
        return "of a deactivated user"
    return ""


def _touch(client: ApiClient) -> None:
    """Record use at most once a minute per key: a commit per request is not free."""
    now = timezone.now()
    if client.last_used is None or now - client.last_used > LAST_USED_EVERY:
        ApiClient.objects.filter(pk=client.pk).update(last_used=now)
