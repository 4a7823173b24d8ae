"""Read queries of the jobs app, as queryset methods."""

from __future__ import annotations

from typing import Any

from django.db import models

from config.lookups import any_of
from identity.access import Access, access_for


class JobQuerySet(models.QuerySet):
    def visible_to(self, who: Any) -> JobQuerySet:
        """The jobs of the catalogs a caller may see (identity.access)."""
        access = who if isinstance(who, Access) else access_for(who)
        if not access.signed_in:
            return self.none()
        if access.catalogs is None:
            return self
        return self.filter(any_of("catalog__slug", access.catalogs))
