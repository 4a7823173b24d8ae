"""The catalog version a reader is told: the catalog's version at the last
change that reader could see.

``Catalog.version`` moves on every change to any of the catalog's tools. A
reader that some tools are hidden from (an agent's roles or unsafe permission)
would learn from it that a hidden tool changed, and how often. So every answer
that names a catalog version or update time to a reader (``/select``,
``tool-calls/validate``, the catalogs API and page) names this one instead: the
highest catalog version made by a change the reader could see, which is either
the last change of a tool it sees now (``Tool.changed_version``) or a change
that hid from it a tool it saw (a deletion, a new safe flag or new roles:
``ToolChange.hides``, judged by the tool's state before). A reader that sees
every tool reads the catalog's own version. For a reader whose access stays the
same it only grows, moves with every change it can see and never with one it
cannot. What the house keys on (snapshots, the answer cache, audit rows) keeps
the catalog's own version, so nothing cached outlives any change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Max

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
    if sight == WHOLE:
        return int(catalog.version)
    key = (catalog.pk, int(catalog.version), catalog.updated.isoformat(), sight)
    with _lock:
        found = _kept.get(key)
    if found is not None:
        return found
    found = _computed(catalog, sight)
    with _lock:
        _kept[key] = found
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return found


def _computed(catalog: Catalog, sight: Sight) -> int:
    roles, unsafe = sight
    upto = int(catalog.version)  # a change committed since is the next version's
    tools = Tool.objects.filter(catalog_id=catalog.pk, changed_version__lte=upto)
    shown = tools.filter(seen_q(roles, unsafe)).aggregate(v=Max("changed_version"))
    hidden = (
        ToolChange.objects.filter(
            catalog_id=catalog.pk, hides=True, catalog_version__lte=upto
        )
        .filter(seen_q(roles, unsafe, prefix="before__"))
        .aggregate(v=Max("catalog_version"))
    )
    return max(1, int(shown["v"] or 0), int(hidden["v"] or 0))


@dataclass(frozen=True)
class Seen:
    """A catalog's version and last update as one reader is told them."""

    version: int
    updated: datetime


def seen_by(catalog: Catalog, access: Access) -> Seen:
    """The catalog's version and update time for ``access`` (the catalogs API
    and page): its own for a reader of every tool; else the time of the last
    change the reader could see (the catalog's creation when none)."""
    sight = sight_of(access)
    if sight == WHOLE:
        return Seen(int(catalog.version), catalog.updated)
    roles, unsafe = sight
    version = visible_version(catalog, sight)
    tools = Tool.objects.filter(catalog_id=catalog.pk, changed_version__lte=version)
    times: list[Any] = [
        tools.filter(seen_q(roles, unsafe)).aggregate(t=Max("updated"))["t"],
        ToolChange.objects.filter(
            catalog_id=catalog.pk, hides=True, catalog_version__lte=version
        )
        .filter(seen_q(roles, unsafe, prefix="before__"))
        .aggregate(t=Max("created"))["t"],
        catalog.created,
    ]
    return Seen(version, max(t for t in times if t is not None))


def hides(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool:
    """Whether a change may hide its tool from a reader who saw it: a deletion,
    a change of its safe flag or its roles, or its hold for review."""
    if before is None:
        return False
    if after is None:
        return True
    held = after.get("status") == "held" != before.get("status")
    return held or any(before.get(k) != after.get(k) for k in ("safe", "allowed_roles"))
