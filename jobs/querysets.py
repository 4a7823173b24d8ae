"""Read queries of the jobs app, as queryset methods."""

from __future__ import annotations

from django.db import models

from audit.actors import Actor
from config.lookups import any_of
from identity.access import Access, access_for


class JobQuerySet(models.QuerySet):
    def visible_to(self, who: Actor | Access) -> JobQuerySet:
        """The jobs of the catalogs a caller may see (identity.access)."""
        access = who if isinstance(who, Access) else access_for(who)
        if not access.signed_in:
            return self.none()
        if access.catalogs is None:
            return self
        return self.filter(any_of("catalog__slug", access.catalogs))
