"""The catalog version a reader is told: the catalog's version at the last
change that reader could see.

``Catalog.version`` moves on every change to any tool, so a reader some tools are
hidden from would learn from it that a hidden tool changed. Every answer that names
a catalog version or update time to a reader names this one instead: the highest
version made by a change the reader could see (``Tool.changed_version``, or a change
that hid a tool from it, ``ToolChange.hides``). Snapshots, the answer cache and audit
rows keep the catalog's own version, so nothing cached outlives any change.
The rule: docs/explanation/security.md, Nothing is trusted from the wrong caller.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from typing import Any

from django.db.models import Max, Q

from catalog.models import Catalog, Tool, ToolChange
from catalog.querysets import seen_q
from identity.access import Access

# (roles a reader has, None for any; whether it may see unsafe tools)
Sight = tuple[tuple[str, ...] | None, bool]
WHOLE: Sight = (None, True)
KEPT = 4096
_kept: OrderedDict[tuple[int, int, str, Sight], int] = OrderedDict()
_lock = threading.Lock()


def sight_of(access: Access) -> Sight:
    """What of a catalog's tools ``access`` sees, as a hashable key."""
    if access.sees_whole_catalog:
        return WHOLE
    roles = tuple(sorted(access.roles)) if access.roles is not None else None
    return (roles, access.allow_unsafe)


def request_sight(visible_roles: tuple[str, ...] | None, visible_unsafe: bool) -> Sight:
    """The sight of an engine request (``visible_roles``, ``visible_unsafe``)."""
    roles = tuple(sorted(visible_roles)) if visible_roles is not None else None
    return (roles, visible_unsafe)


def visible_version(catalog: Catalog, sight: Sight) -> int:
    """The catalog's version as a reader of ``sight`` is told it; read once per
    catalog version and sight in a process (and update time: a version number
    a rolled back change had used may come again)."""
    return visible_versions([catalog], sight)[catalog.pk]


def visible_versions(catalogs: list[Catalog], sight: Sight) -> dict[int, int]:
    """``visible_version`` of each catalog (by id): those not kept yet read in
    two grouped queries, however many there are (a page of the catalogs API)."""
    if sight == WHOLE:
        return {catalog.pk: int(catalog.version) for catalog in catalogs}
    keys = {catalog.pk: _key(catalog, sight) for catalog in catalogs}
    with _lock:
        found = {pk: _kept[key] for pk, key in keys.items() if key in _kept}
    missing = {c.pk: int(c.version) for c in catalogs if c.pk not in found}
    if not missing:
        return found
    roles, unsafe = sight
    # A change committed since a catalog was read is its next version's.
    shown = _latest(Tool, "changed_version", missing, seen_q(roles, unsafe))
    hides = seen_q(roles, unsafe, prefix="before__") & Q(hides=True)
    hidden = _latest(ToolChange, "catalog_version", missing, hides)
    with _lock:
        for pk in missing:
            found[pk] = max(1, int(shown.get(pk) or 0), int(hidden.get(pk) or 0))
            _kept[keys[pk]] = found[pk]
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return found


def _key(catalog: Catalog, sight: Sight) -> tuple[int, int, str, Sight]:
    return (catalog.pk, int(catalog.version), catalog.updated.isoformat(), sight)


def _latest(
    model: Any, column: str, upto: dict[int, int], condition: Q, field: str = ""
) -> dict[int, Any]:
    """Per catalog id of ``upto``, the highest ``field`` (default ``column``) of
    its rows that meet ``condition`` and whose ``column`` is at most that
    catalog's bound: one grouped query."""
    within = reduce(
        operator.or_,
        (Q(catalog_id=pk, **{f"{column}__lte": bound}) for pk, bound in upto.items()),
    )
    rows = model.objects.filter(within, condition).order_by().values("catalog_id")
    rows = rows.annotate(most=Max(field or column))
    return {row["catalog_id"]: row["most"] for row in rows}


@dataclass(frozen=True)
class Seen:
    """A catalog's version and last update as one reader is told them."""

    version: int
    updated: datetime


def seen_by(catalog: Catalog, access: Access) -> Seen:
    """The catalog's version and update time for ``access`` (the catalogs API
    and page): its own for a reader of every tool; else the time of the last
    change the reader could see (the catalog's creation when none)."""
    return seen_by_each([catalog], access)[catalog.pk]


def seen_by_each(catalogs: list[Catalog], access: Access) -> dict[int, Seen]:
    """``seen_by`` of each catalog (by id), in a few grouped queries however
    many catalogs there are: a page costs the same whatever the reader sees."""
    sight = sight_of(access)
    if sight == WHOLE or not catalogs:
        return {c.pk: Seen(int(c.version), c.updated) for c in catalogs}
    roles, unsafe = sight
    versions = visible_versions(catalogs, sight)
    shown = _latest(Tool, "changed_version", versions, seen_q(roles, unsafe), "updated")
    hides = seen_q(roles, unsafe, prefix="before__") & Q(hides=True)
    hidden = _latest(ToolChange, "catalog_version", versions, hides, "created")
    seen = {}
    for catalog in catalogs:
        times = (shown.get(catalog.pk), hidden.get(catalog.pk), catalog.created)
        latest = max(t for t in times if t is not None)
        seen[catalog.pk] = Seen(versions[catalog.pk], latest)
    return seen


def hides(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool:
    """Whether a change may hide its tool from a reader who saw it: a deletion,
    a change of its safe flag or its roles, or its hold for review."""
    if before is None:
        return False
    if after is None:
        return True
    held = after.get("status") == "held" != before.get("status")
    return held or any(before.get(k) != after.get(k) for k in ("safe", "allowed_roles"))
