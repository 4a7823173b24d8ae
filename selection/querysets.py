"""Read queries of the selection app, as queryset methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

from selection.engine.settings import EngineSettings

if TYPE_CHECKING:
    from catalog.models import Catalog


class SelectionSettingsQuerySet(models.QuerySet):
    def effective_for(self, catalog: Catalog) -> tuple[EngineSettings, int]:
        """The one reader of a catalog's settings: defaults filled in, and the
        version (0 while the catalog has never changed them)."""
        row: Any = self.filter(catalog=catalog).only("data", "version").first()
        if row is None:
            return EngineSettings(), 0
        return EngineSettings.from_dict(row.data), row.version


class SelectionSettingsChangeQuerySet(models.QuerySet):
    def history_of(self, catalog: Catalog) -> SelectionSettingsChangeQuerySet:
        """Every settings version of ``catalog``, newest first."""
        return self.filter(catalog=catalog).order_by("-version", "-id")
