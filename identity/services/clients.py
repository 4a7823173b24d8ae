"""API clients: bearer keys for agents and scripts (only a hash is stored).

A key is made, changed, rotated or revoked only by a caller that holds everything
the key holds (``identity.access.key_within``); a key made by a key records it as
its parent and a key made by a person records them as its owner, so the key stops
with them (``identity.auth``)."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
from identity.access import ALL_CATALOGS, KeyGrant, access_for, key_within
from identity.access_people import Manager, grant_of
from identity.catalogs import existing_catalogs
from identity.choices import ApiScope
from identity.models import ApiClient

KEY_PREFIX = "qv"
CATALOGS_RULE = (
    "catalogs: name the catalogs the key may see, or '*' for every catalog "
    "(an empty list is not every catalog)"
)
EXPIRED_RULE = (
    "expires: an expired key cannot be rotated; give it a later expiry first "
    "(PATCH expires) or make a new key"
)
EDITABLE = ("roles", "catalogs", "allow_unsafe", "rate_limit_per_minute", "expires")


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
        "catalogs": ALL_CATALOGS if client.all_catalogs else list(client.catalogs),
        "allow_unsafe": client.allow_unsafe,
        "rate_limit_per_minute": client.rate_limit_per_minute,
        "expires": client.expires.isoformat() if client.expires else None,
        "revoked": client.revoked,
        "key_prefix": client.key_prefix,
        "owner": client.owner_name or None,
        "parent": client.parent_name or None,
        "person": client.person_name or None,
    }


def _audit(
    event_type: str,
    client: ApiClient,
    *,
    actor: Actor,
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


def catalog_choice(catalogs: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """The catalogs asked for: None for '*' (every catalog); empty is refused."""
    if catalogs == ALL_CATALOGS:
        return None
    if isinstance(catalogs, str) or not catalogs or ALL_CATALOGS in catalogs:
        raise ValidationError({"catalogs": [CATALOGS_RULE]})
    return tuple(dict.fromkeys(catalogs))


def acting_key(actor: Actor) -> ApiClient | None:
    """The API client behind an actor's service user, if the actor is a key."""
    client = getattr(actor, "api_client", None) if actor is not None else None
    return client if isinstance(client, ApiClient) else None


def require_within(actor: Actor, grant: ApiClient | KeyGrant) -> None:
    """403 naming the field when a person or key acting would make or manage a key
    bigger than itself; the system (a management command, no actor) may."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        return
    problem = key_within(access_for(actor), grant)
    if problem:
        raise PermissionDenied(problem)


def create_api_client(
    name: str,
    scope: str,
    roles: list[str] | None = None,
    catalogs: Sequence[str] | str | None = None,
    *,
    allow_unsafe: bool = False,
    expires: datetime | None = None,
    rate_limit_per_minute: int | None = None,
    person: Any = None,
    actor: Actor = None,
    request_id: uuid.UUID | None = None,
) -> tuple[ApiClient, str]:
    """Create a client and its service user; return the key, shown only this once.

    ``catalogs`` is a list of slugs or '*' for every catalog. A person acting
    becomes the key's owner and a key acting its parent: the key stops with them.
    ``person`` binds the key to the person it acts for (``bound_person``): it
    never holds more than they do, and the audit names them."""
    if scope not in ApiScope.values:
        raise ValidationError({"scope": [f"scope: must be one of {ApiScope.values}"]})
    grant = KeyGrant(
        scope=scope,
        catalogs=catalog_choice(catalogs),
        roles=tuple(roles or ()),
        allow_unsafe=allow_unsafe,
        rate_limit=rate_limit_per_minute,
        expires=expires,
    )
    require_within(actor, grant)
    person = bound_person(actor, person)
    _check_catalogs(grant.catalogs)
    if ApiClient.objects.filter(name=name).exists():
        raise ValidationError({"name": [f"name: a client named {name!r} exists"]})
    with transaction.atomic():
        client, key = _save_new(name, grant, actor=actor, person=person)
        _audit(
            EventType.CLIENT_CREATED,
            client,
            actor=actor,
            request_id=request_id,
            before=None,
        )
    return client, key


PERSON_RULE = (
    "person: a key acts only for yourself, or for a person you manage (who holds "
    "no more than you)"
)


def person_named(username: str) -> Any:
    """The active person of this username (never a key's service user), or a
    400 naming the field: what a key may be bound to."""
    person = (
        get_user_model()
        .objects.filter(username=username, is_active=True, api_client__isnull=True)
        .first()
    )
    if person is None:
        raise ValidationError({"person": [f"person: no active person {username!r}"]})
    return person


def bound_person(actor: Actor, person: Any) -> Any:
    """The person a new key acts for: ``person`` when the actor may bind it (the
    system; the person themself; a person who manages them), else 403 naming
    the field. A key made by a bound key acts for the same person, whatever is
    asked: a key never escapes its maker's person."""
    if person is not None and (
        not getattr(person, "is_active", False) or acting_key(person) is not None
    ):
        raise ValidationError({"person": ["person: not an active person"]})
    maker = acting_key(actor)
    if maker is not None and maker.person_name:
        if maker.person_id is None or (
            person is not None and person.pk != maker.person_id
        ):
            raise PermissionDenied(PERSON_RULE)
        return maker.person
    if person is None or actor is None or not getattr(actor, "pk", None):
        return person
    if maker is not None:
        raise PermissionDenied(PERSON_RULE)
    if person.pk != actor.pk and Manager(actor).refusal(grant_of(person)):
        raise PermissionDenied(PERSON_RULE)
    return person


# ``actor`` is an Actor; Any as mypy cannot see that ``owner``, an actor with a pk,
# is a saved user.
def _save_new(
    name: str, grant: KeyGrant, *, actor: Any, person: Any = None
) -> tuple[ApiClient, str]:
    prefix, key = _new_key()
    parent = acting_key(actor)
    owner = actor if parent is None and getattr(actor, "pk", None) else None
    user = get_user_model().objects.create_user(username=f"api:{name}"[:150])
    user.set_unusable_password()
    user.save(update_fields=["password"])
    client = ApiClient(
        name=name,
        user=user,
        owner=owner,
        owner_name=owner.get_username() if owner is not None else "",
        parent=parent,
        parent_name=parent.name if parent is not None else "",
        person=person,
        person_name=person.get_username() if person is not None else "",
        scope=grant.scope,
        roles=list(grant.roles),
        catalogs=list(grant.catalogs or ()),
        all_catalogs=grant.catalogs is None,
        allow_unsafe=grant.allow_unsafe,
        expires=grant.expires,
        rate_limit_per_minute=grant.rate_limit,
        key_prefix=prefix,
        key_hash=hash_key(key),
    )
    client.full_clean(exclude=["user", "owner", "parent", "person"])
    client.save()
    return client, key


def _check_catalogs(catalogs: tuple[str, ...] | None) -> None:
    known = existing_catalogs(catalogs or ())
    missing = sorted(set(catalogs or ()) - known)
    if missing:
        raise ValidationError(
            {"catalogs": [f"catalogs: unknown catalog {missing[0]!r}"]}
        )


def change_api_client(
    client: ApiClient,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    **changes: Any,
) -> ApiClient:
    """Change a key's roles, catalogs, unsafe permission, rate limit or expiry.

    The key before and the key after must both be within the caller (403 naming
    the field); an unchanged key records nothing."""
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise ValidationError({unknown[0]: [f"{unknown[0]}: cannot be changed"]})
    with transaction.atomic():
        client = ApiClient.objects.select_for_update().get(pk=client.pk)
        require_within(actor, client)
        before = describe(client)
        after = _changed_grant(KeyGrant.of(client), changes)
        require_within(actor, after)
        if "catalogs" in changes:
            _check_catalogs(after.catalogs)
        fields = _apply(client, after)
        if not fields:
            return client
        client.full_clean(exclude=["user", "owner", "parent", "person"])
        client.save(update_fields=fields)
        _audit(
            EventType.CLIENT_CHANGED,
            client,
            actor=actor,
            request_id=request_id,
            before=before,
        )
    return client


def _changed_grant(grant: KeyGrant, changes: dict[str, Any]) -> KeyGrant:
    new: dict[str, Any] = {}
    if "catalogs" in changes:
        new["catalogs"] = catalog_choice(changes["catalogs"])
    if "roles" in changes:
        new["roles"] = tuple(changes["roles"] or ())
    if "allow_unsafe" in changes:
        new["allow_unsafe"] = bool(changes["allow_unsafe"])
    if "rate_limit_per_minute" in changes:
        new["rate_limit"] = changes["rate_limit_per_minute"]
    if "expires" in changes:
        new["expires"] = changes["expires"]
    return replace(grant, **new)


def _apply(client: ApiClient, grant: KeyGrant) -> list[str]:
    """Set the new values on the client; the names of the fields that changed."""
    values = {
        "roles": list(grant.roles),
        "catalogs": list(grant.catalogs or ()),
        "all_catalogs": grant.catalogs is None,
        "allow_unsafe": grant.allow_unsafe,
        "rate_limit_per_minute": grant.rate_limit,
        "expires": grant.expires,
    }
    fields = [name for name, value in values.items() if getattr(client, name) != value]
    for name in fields:
        setattr(client, name, values[name])
    return fields


def revoke_api_client(
    client: ApiClient, *, actor: Actor, request_id: uuid.UUID | None = None
) -> ApiClient:
    """Stop a key for good (idempotent: revoking twice records one event).

    Keys it made stop with it (identity.auth checks the chain)."""
    with transaction.atomic():
        client = ApiClient.objects.select_for_update().get(pk=client.pk)
        require_within(actor, client)
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
    client: ApiClient, *, actor: Actor, request_id: uuid.UUID | None = None
) -> tuple[ApiClient, str]:
    """Give a client a new key; the old one stops at once. Returns the new key."""
    with transaction.atomic():
        client = ApiClient.objects.select_for_update().get(pk=client.pk)
        require_within(actor, client)
        if client.revoked:
            raise ValidationError({"revoked": ["revoked: a revoked key stays revoked"]})
        if client.expires is not None and client.expires <= timezone.now():
            raise ValidationError({"expires": [EXPIRED_RULE]})
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
