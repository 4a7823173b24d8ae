"""The roles a person may give an agent: their own, or, for an admin (who holds
every role), the roles their catalogs know (``catalog.querysets.known_roles``)."""

from __future__ import annotations

from catalog.models import Catalog
from catalog.querysets import known_roles
from identity.access import Access


def roles_held(access: Access) -> tuple[str, ...]:
    if access.roles is not None:
        return tuple(access.roles)
    catalogs = Catalog.objects.all()
    if access.catalogs is not None:
        catalogs = catalogs.filter(slug__in=access.catalogs)
    return tuple(known_roles(list(catalogs.values_list("pk", flat=True))))
