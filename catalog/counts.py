"""How many tools a caller's list holds, as a sum over the caller's catalogs.

A page's count would otherwise read every tool of every catalog the caller sees
(16,000 for a key of 500 catalogs) on every page. Each catalog's count is kept in
the process by the catalog's version and last update, the caller's sight and the
list's filters, and the sum by a mark of the caller's catalogs (how many, their
ids', versions' sums and latest update: any change moves one). A tool's listed
fields change only with its catalog's version (``catalog.services.changes``), so
a kept count is never of an older catalog. Its embedding status changes without
a version, so that filter is always counted, as is a list of one named catalog.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

from django.db.models import Count, Max, QuerySet, Sum, TextField
from django.db.models.functions import Cast

from catalog.models import Catalog, Tool
from catalog.versions import sight_of
from config.lookups import any_of
from identity.access import Access

# Per catalog, sight and filters: 40 lists of a key of 500 catalogs, ~4 MB.
KEPT = 20_000
# Sums, per caller's catalogs, sight, filters and mark.
KEPT_SUMS = 2_000
UNKEPT_FILTERS = ("catalog", "embedding_status")
_kept: OrderedDict[tuple[Any, ...], int] = OrderedDict()
_sums: OrderedDict[tuple[Any, ...], int] = OrderedDict()
_lock = threading.Lock()


def count_tools(access: Access, filters: dict[str, Any]) -> int:
    """How many tools ``access`` sees with ``filters`` (``ToolQuerySet.filtered``'s
    keywords): the kept sum while the caller's catalogs are unchanged, else the
    catalogs' kept counts summed and those not kept counted in one grouped
    query."""
    if any(filters.get(name) for name in UNKEPT_FILTERS):
        return _tools(access, filters).count()
    asked = (sight_of(access), tuple(sorted(filters.items())))
    catalogs = Catalog.objects.visible_to(access)
    mark = catalogs.aggregate(
        n=Count("pk"), ids=Sum("pk"), versions=Sum("version"), last=Max("updated")
    )
    listed = (_named(access.catalogs), *asked, *mark.values())
    with _lock:
        total = _sums.get(listed)
    if total is None:
        total = sum(_per_catalog(_tools(access, filters), catalogs, asked).values())
        _keep(_sums, {listed: total}, KEPT_SUMS)
    return total


def _named(slugs: tuple[str, ...] | None) -> bytes | None:
    """The caller's catalogs as a digest: a key of 500 slugs, not the slugs."""
    if slugs is None:
        return None
    return hashlib.blake2b("\n".join(slugs).encode(), digest_size=16).digest()


def _tools(access: Access, filters: dict[str, Any]) -> QuerySet[Tool]:
    return Tool.objects.visible_to(access).filtered(**filters)


def _per_catalog(
    tools: QuerySet[Any], catalogs: QuerySet[Catalog], asked: tuple[Any, ...]
) -> dict[int, int]:
    # The update time as Postgres writes it: 500 of them parsed cost more than
    # the count they save.
    stamped = catalogs.annotate(stamp=Cast("updated", TextField()))
    rows = stamped.values_list("pk", "version", "stamp")
    keys = {pk: (pk, number, stamp, *asked) for pk, number, stamp in rows}
    with _lock:
        found = {pk: _kept[key] for pk, key in keys.items() if key in _kept}
    missing = [pk for pk in keys if pk not in found]
    if missing:
        counted = tools.filter(any_of("catalog__id", missing)).order_by()
        counted = counted.values_list("catalog_id").annotate(n=Count("pk"))
        fresh = dict.fromkeys(missing, 0) | dict(counted)
        _keep(_kept, {keys[pk]: number for pk, number in fresh.items()}, KEPT)
        found |= fresh
    return found


def _keep(
    kept: OrderedDict[tuple[Any, ...], int], new: dict[Any, int], most: int
) -> None:
    """``new`` kept under one hold of the lock, the oldest beyond ``most`` dropped."""
    with _lock:
        kept.update(new)
        while len(kept) > most:
            kept.popitem(last=False)


class Counted:
    """A queryset whose ``count()`` is ``count`` (what a paginator asks of it
    besides slices), so a page counts through ``count_tools``."""

    ordered = True

    def __init__(self, queryset: QuerySet[Any], count: Any) -> None:
        self.queryset = queryset
        self._count = count

    def count(self) -> int:
        return int(self._count())

    def __getitem__(self, index: Any) -> Any:
        return self.queryset[index]

    def __len__(self) -> int:
        return self.count()
