"""API clients: bearer keys for agents and scripts (only a hash is stored)."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

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


def create_api_client(
    name: str,
    scope: str,
    roles: list[str] | None = None,
    catalogs: list[str] | None = None,
) -> tuple[ApiClient, str]:
    """Create a client and its service user; return the key, shown only this once."""
    if scope not in ApiScope.values:
        raise ValidationError({"scope": [f"scope: must be one of {ApiScope.values}"]})
    catalogs = catalogs or []
    missing = sorted(
        set(catalogs) - set(Catalog.objects.values_list("slug", flat=True))
    )
    if missing:
        raise ValidationError(
            {"catalogs": [f"catalogs: unknown catalog {missing[0]!r}"]}
        )
    if ApiClient.objects.filter(name=name).exists():
        raise ValidationError({"name": [f"name: a client named {name!r} exists"]})
    prefix = secrets.token_hex(5)
    key = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32).replace('_', '-')}"
    with transaction.atomic():
        user = get_user_model().objects.create_user(username=f"api:{name}"[:150])
        user.set_unusable_password()
        user.save(update_fields=["password"])
        client = ApiClient(
            name=name,
            user=user,
            scope=scope,
            roles=roles or [],
            catalogs=catalogs,
            key_prefix=prefix,
            key_hash=hash_key(key),
        )
        client.full_clean(exclude=["user"])
        client.save()
    return client, key
