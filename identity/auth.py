"""Bearer-key authentication for API clients (who may do what: identity.access)."""

from __future__ import annotations

import hmac
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from config.ratelimit import penalize_unknown_key
from identity.choices import ClientKind
from identity.key_chain import MAX_CHAIN, key_chain
from identity.models import ApiClient
from identity.reads import client_by_prefix
from identity.services.clients import hash_key, split_key

LAST_USED_EVERY = timedelta(minutes=1)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer qv_...``; the request's user is the client's user.

    A key stops working when it is revoked, past its expiry, or when its service
    user is deactivated, the person who made it is deactivated or deleted, or any
    key above it (the key that made it, and so on) has stopped."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiClient] | None:
        header = authentication.get_authorization_header(request).decode(
            errors="ignore"
        )
        if not header.startswith(f"{self.keyword} "):
            return None
        parts = split_key(header[len(self.keyword) + 1 :].strip())
        # Any bearer that is not a key's is a guess, of a key or of another
        # bearer secret (the metrics token): slow, then 429 after many per address.
        if parts is None:
            penalize_unknown_key(request)
            raise exceptions.AuthenticationFailed("Authorization: malformed API key")
        prefix, key = parts
        client = client_by_prefix(prefix)
        if (
            client is None
            or client.kind != ClientKind.KEY
            or not hmac.compare_digest(client.key_hash, hash_key(key))
        ):
            penalize_unknown_key(request)
            raise exceptions.AuthenticationFailed("Authorization: unknown API key")
        problem = key_problem(client)
        if problem:
            raise exceptions.AuthenticationFailed(f"Authorization: API key {problem}")
        _touch(client)
        return client.user, client

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def key_problem(client: ApiClient) -> str:
    """Why a well-formed key of this client may not be used, or ''.

    The key's own state comes with the authenticating query (its user and owner
    are joined); the keys above it, when it was made by a key, cost one more query
    (a recursive CTE up the chain), and so does the person a bound key acts for."""
    if client.person_name and (client.person is None or not client.person.is_active):
        # Checked first: the key acts for someone it no longer can act for.
        state = "deleted" if client.person is None else "deactivated"
        return f"acting for a {state} person"
    own = _stop_reason(
        revoked=client.revoked,
        expires=client.expires,
        user_active=client.user.is_active,
        owner_name=client.owner_name,
        owner_active=client.owner.is_active if client.owner is not None else None,
        parent_name=client.parent_name,
        parent_id=client.parent_id,
    )
    if own or client.parent_id is None:
        return own
    return _ancestor_problem(client.parent_id)


def _stop_reason(
    *,
    revoked: bool,
    expires: datetime | None,
    user_active: bool,
    owner_name: str,
    owner_active: bool | None,
    parent_name: str,
    parent_id: int | None,
) -> str:
    """One key's own reason to stop; ``owner_active`` None: no owner row."""
    if revoked:
        return "revoked"
    if expires is not None and expires <= timezone.now():
        return "expired"
    if not user_active:
        return "deactivated"
    if owner_active is False:
        return "of a deactivated user"
    if owner_name and owner_active is None:
        return "of a deleted user"
    if parent_name and parent_id is None:
        return "made by a deleted key"
    return ""


def _ancestor_problem(parent_id: int) -> str:
    """The first stopped key up the chain from ``parent_id``, in one query."""
    rows = key_chain(parent_id)
    if len(rows) >= MAX_CHAIN:
        return "stopped: its chain of keys is too long to check"
    for row in rows:
        _id, name, revoked, expires, user_active, owner, owner_on, parent, pid = row[:9]
        reason = _stop_reason(
            revoked=revoked,
            expires=expires,
            user_active=user_active,
            owner_name=owner,
            owner_active=owner_on,
            parent_name=parent,
            parent_id=pid,
        )
        if reason:
            return f"stopped: the key {name!r} above it is {reason}"
    return ""


def _touch(client: ApiClient) -> None:
    """Record use at most once a minute per key: a commit per request is not free."""
    now = timezone.now()
    if client.last_used is None or now - client.last_used > LAST_USED_EVERY:
        ApiClient.objects.filter(pk=client.pk).update(last_used=now)
