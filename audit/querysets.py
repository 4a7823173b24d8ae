"""Read queries of the audit log, as queryset methods."""

from __future__ import annotations

from typing import Any

from django.db import models


class AuditEventQuerySet(models.QuerySet):
    def visible_to(self, who: Any) -> AuditEventQuerySet:
        """Events a compliance reader may see: only its catalogs' when it is limited
        to some (events of no catalog, such as key changes, need every catalog)."""
        from catalog.access import Access, access_for

        access = who if isinstance(who, Access) else access_for(who)
        if not access.can_audit:
            return self.none()
        if access.catalogs is None:
            return self
        return self.filter(catalog_slug__in=access.catalogs)
