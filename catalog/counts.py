"""How many tools a caller's list holds, as a sum over the caller's catalogs.

A page's count would otherwise read every tool of every catalog the caller sees
(16,000 for a key of 500 catalogs) on every page. Each catalog's count is kept in
the process by the catalog's version and last update, the caller's sight and the
list's filters: a tool's listed fields change only with its catalog's version
(``catalog.services.changes``), so a kept count is never of an older catalog.
Its embedding status changes without a version, so that filter is always counted,
as is a list of one named catalog (its count is one catalog's already).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django.db.models import Count, QuerySet, TextField
from django.db.models.functions import Cast

from catalog.models import Catalog
from catalog.versions import Sight, sight_of
from config.lookups import any_of
from identity.access import Access

# Per catalog, sight and filters: 40 lists of a key of 500 catalogs, ~4 MB.
KEPT = 20_000
Key = tuple[int, int, str, Sight, tuple[tuple[str, Any], ...]]
_kept: OrderedDict[Key, int] = OrderedDict()
_lock = threading.Lock()
UNKEPT_FILTERS = ("catalog", "embedding_status")


def count_tools(tools: QuerySet[Any], access: Access, filters: dict[str, Any]) -> int:
    """``tools.count()`` for ``tools``, the tools ``access`` sees filtered by
    ``filters`` (``ToolQuerySet.filtered``'s keywords): the catalogs' kept counts
    summed, and those not kept counted in one grouped query."""
    if any(filters.get(name) for name in UNKEPT_FILTERS):
        return tools.count()
    asked = tuple(sorted(filters.items()))
    sight = sight_of(access)
    # The update time as Postgres writes it: 500 of them parsed cost more than
    # the count they save.
    stamped = Catalog.objects.visible_to(access).annotate(
        stamp=Cast("updated", TextField())
    )
    rows = stamped.values_list("pk", "version", "stamp")
    keys = {pk: (pk, number, stamp, sight, asked) for pk, number, stamp in rows}
    with _lock:
        found = {pk: _kept[key] for pk, key in keys.items() if key in _kept}
    missing = [pk for pk in keys if pk not in found]
    if missing:
        counted = tools.filter(any_of("catalog__id", missing)).order_by()
        counted = counted.values_list("catalog_id").annotate(n=Count("pk"))
        fresh = dict.fromkeys(missing, 0) | dict(counted)
        with _lock:
            for pk, number in fresh.items():
                _kept[keys[pk]] = number
            while len(_kept) > KEPT:
                _kept.popitem(last=False)
        found |= fresh
    return sum(found.values())


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
