"""Audit records of changes to what a person may see (groups, flags, catalogs).

The admin site makes these changes through its own forms; it calls
``record_access_change`` inside the same transaction, so the chain holds who changed
whose access, from what to what."""

from __future__ import annotations

from typing import Any

from audit.choices import EventType
from audit.services import record_event
from catalog.access import Actor
from catalog.models import UserCatalogAccess


def access_state(user: Any) -> dict[str, Any]:
    """What decides a person's access (catalog.access), as plain data."""
    row = UserCatalogAccess.objects.filter(user=user).first()
    return {
        "username": user.get_username(),
        "is_active": user.is_active,
        "is_superuser": user.is_superuser,
        "groups": sorted(user.groups.values_list("name", flat=True)),
        "catalogs": list(row.catalogs) if row is not None else [],
    }


def record_access_change(
    user: Any, before: dict[str, Any] | None, *, actor: Actor
) -> None:
    """One audit event when a person's access changed (none when nothing did)."""
    after = access_state(user)
    if before == after:
        return
    record_event(
        EventType.ACCESS_CHANGED,
        actor=actor,
        request_id=None,
        summary=f"access of {after['username']!r} changed",
        input={"user_id": user.pk, "before": before},
        output={"user_id": user.pk, "after": after},
    )
