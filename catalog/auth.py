"""Bearer-key authentication for API clients, and who may do what."""

from __future__ import annotations

import hmac
from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from catalog.choices import ApiScope
from catalog.models import ApiClient
from catalog.services.clients import hash_key, split_key
from config.ratelimit import penalize_unknown_key

WRITE_SCOPES = {ApiScope.CURATOR, ApiScope.ADMIN}
LAST_USED_EVERY = timedelta(minutes=1)
AUDIT_SCOPES = {ApiScope.COMPLIANCE, ApiScope.ADMIN}


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer qv_...``; the request's user is the client's user."""

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
            ApiClient.objects.select_related("user").filter(key_prefix=prefix).first()
        )
        if client is None or not hmac.compare_digest(client.key_hash, hash_key(key)):
            penalize_unknown_key(request)  # slow, then 429 after many per address
            raise exceptions.AuthenticationFailed("Authorization: unknown API key")
        if client.revoked:
            raise exceptions.AuthenticationFailed("Authorization: API key revoked")
        now = timezone.now()
        # At most one write a minute per key: a commit per request is not free.
        if client.last_used is None or now - client.last_used > LAST_USED_EVERY:
            ApiClient.objects.filter(pk=client.pk).update(last_used=now)
        return client.user, client

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def scope_of(user: Any) -> str | None:
    """The caller's scope: its API client's, or for people their group's."""
    if user is None or not user.is_authenticated:
        return None
    client = getattr(user, "api_client", None)
    if client is not None:
        return str(client.scope)
    if user.is_superuser:
        return ApiScope.ADMIN
    groups = set(user.groups.values_list("name", flat=True))
    for scope in (ApiScope.ADMIN, ApiScope.CURATOR, ApiScope.COMPLIANCE):
        if scope.value in groups:
            return scope.value
    return ApiScope.AGENT


def caller_roles(user: Any) -> tuple[str, ...] | None:
    """Roles for selection policy; None means every role (admins)."""
    if scope_of(user) == ApiScope.ADMIN:
        return None
    client = getattr(user, "api_client", None)
    if client is not None:
        return tuple(client.roles)
    return tuple(user.groups.values_list("name", flat=True))


class CuratorWrites(permissions.BasePermission):
    """Anyone signed in reads; curators and admins write."""

    message = "permission: writing the catalog needs the curator or admin scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        return scope_of(request.user) in WRITE_SCOPES


class ComplianceReads(permissions.BasePermission):
    message = "permission: the audit log needs the compliance or admin scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        return scope_of(request.user) in AUDIT_SCOPES
