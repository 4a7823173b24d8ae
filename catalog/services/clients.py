"""API clients: bearer keys for agents and scripts (only a hash is stored)."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from audit.choices import EventType
from audit.services import record_event
from catalog.choices import ApiScope
from catalog.models import ApiClient, Catalog

KEY_PREFIX = "qv"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def split_key(key: str) -> tuple[str, str] | None:
    """('prefix', 'whole key') for a well-formed key, else None."""
    parts = key.split("_")
    if len(parts) != 3 or parts[0] != KEY_PREFIX or len(parts[1]) != 10:
        return None
    return parts[1], key


def _new_key() -> tuple[str, str]:
    """(prefix, whole key); the key is shown once, only its hash is stored."""
    prefix = secrets.token_hex(5)
    key = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32).replace('_', '-')}"
    return prefix, key


def describe(client: ApiClient) -> dict[str, Any]:
    """A client's settings as audit rows record them (never the key or its hash)."""
    return {
        "name": client.name,
        "scope": client.scope,
        "roles": list(client.roles),
        "catalogs": list(client.catalogs),
        "allow_unsafe": client.allow_unsafe,
        "rate_limit_per_minute": client.rate_limit_per_minute,
        "expires": client.expires.isoformat() if client.expires else None,
        "revoked": client.revoked,
        "key_prefix": client.key_prefix,
    }


def _audit(
    event_type: str,
    client: ApiClient,
    *,
    actor: Any,
    request_id: uuid.UUID | None,
    before: dict[str, Any] | None,
) -> None:
    record_event(
        event_type,
        actor=actor,
        request_id=request_id,
        summary=f"API key {client.name!r} ({client.scope}): {event_type}",
        input={"client_id": client.pk, "before": before},
        output={"client_id": client.pk, "after": describe(client)},
    )


def create_api_client(
    name: str,
    scope: str,
    roles: list[str] | None = None,
    catalogs: list[str] | None = None,
    *,
    allow_unsafe: bool = False,
    expires: datetime | None = None,
    rate_limit_per_minute: int | None = None,
    actor: Any = None,
    request_id: uuid.UUID | None = None,
) -> tuple[ApiClient, str]:
    """Create a client and its service user; return the key, shown only this once.

    The actor (a person) becomes the key's owner: deactivating them stops it."""
    if scope not in ApiScope.values:
        raise ValidationError({"scope": [f"scope: must be one of {ApiScope.values}"]})
    catalogs = catalogs or []
    _check_catalogs(catalogs)
    if ApiClient.objects.filter(name=name).exists():
        raise ValidationError({"name": [f"name: a client named {name!r} exists"]})
    prefix, key = _new_key()
    owner = actor if actor is not None and actor.is_authenticated else None
    with transaction.atomic():
        user = get_user_model().objects.create_user(username=f"api:{name}"[:150])
        user.set_unusable_password()
        user.save(update_fields=["password"])
        client = ApiClient(
            name=name,
            user=user,
            owner=owner if owner is not None and owner.pk else None,
            scope=scope,
            roles=roles or [],
            catalogs=catalogs,
            allow_unsafe=allow_unsafe,
            expires=expires,
            rate_limit_per_minute=rate_limit_per_minute,
            key_prefix=prefix,
            key_hash=hash_key(key),
        )
        client.full_clean(exclude=["user"])
        client.save()
        _audit(
            EventType.CLIENT_CREATED,
            client,
            actor=actor,
            request_id=request_id,
            before=None,
        )
    return client, key


def _check_catalogs(catalogs: list[str]) -> None:
    known = set(Catalog.objects.values_list("slug", flat=True))
    missing = sorted(set(catalogs) - known)
    if missing:
        raise ValidationError(
            {"catalogs": [f"catalogs: unknown catalog {missing[0]!r}"]}
        )


def revoke_api_client(
    client: ApiClient, *, actor: Any, request_id: uuid.UUID | None = None
) -> ApiClient:
    """Stop a key for good (idempotent: revoking twice records one event)."""
    with transaction.atomic():
        client = ApiClient.objects.select_for_update().get(pk=client.pk)
        if client.revoked:
            return client
        before = describe(client)
        client.revoked = True
        client.save(update_fields=["revoked"])
        _audit(
            EventType.CLIENT_REVOKED,
            client,
            actor=actor,
            request_id=request_id,
            before=before,
        )
    return client


def rotate_api_client(
    client: ApiClient, *, actor: Any, request_id: uuid.UUID | None = None
) -> tuple[ApiClient, str]:
    """Give a client a new key; the old one stops at once. Returns the new key."""
    with transaction.atomic():
        client = ApiClient.objects.select_for_update().get(pk=client.pk)
        if client.revoked:
            raise ValidationError({"revoked": ["revoked: a revoked key stays revoked"]})
        before = describe(client)
        client.key_prefix, key = _new_key()
        client.key_hash = hash_key(key)
        client.save(update_fields=["key_prefix", "key_hash"])
        _audit(
            EventType.CLIENT_ROTATED,
            client,
            actor=actor,
            request_id=request_id,
            before=before,
        )
    return client, key
