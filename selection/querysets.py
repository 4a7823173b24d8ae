"""Read queries of the selection app, as queryset methods."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connection, models

from config.fast.rows import Columns, column, fetch_one
from screening.policy import ScreeningPolicy
from selection.engine.settings import EngineSettings

if TYPE_CHECKING:
    from catalog.models import Catalog


@dataclass(frozen=True)
class StoredSettings:
    """A catalog's settings row as read (``data`` None and version 0 while the
    catalog has never changed them). Parsing them is left to the reader that
    needs them (a snapshot being built), not every request."""

    data: dict[str, Any] | None
    version: int

    def effective(self) -> EngineSettings:
        """The settings with defaults filled in."""
        return EngineSettings.from_dict(self.data) if self.data else EngineSettings()

    def screening(self) -> ScreeningPolicy:
        """The catalog's trust policy alone (checked when it was saved): a
        call and a sync read it without parsing the rest."""
        trust = (self.data or {}).get("trust")
        return _policy(json.dumps(trust, sort_keys=True)) if trust else DEFAULT_POLICY


DEFAULT_POLICY = ScreeningPolicy()


@functools.lru_cache(maxsize=256)
def _policy(trust: str) -> ScreeningPolicy:
    return ScreeningPolicy.from_dict(json.loads(trust))


class SelectionSettingsQuerySet(models.QuerySet):
    def effective_for(self, catalog: Catalog) -> tuple[EngineSettings, int]:
        """The one reader of a catalog's settings: defaults filled in, and the
        version (0 while the catalog has never changed them)."""
        stored = self.stored_for(catalog)
        return stored.effective(), stored.version

    def stored_for(self, catalog: Catalog) -> StoredSettings:
        """The catalog's settings row as stored, read on every selection with
        SQL made once per process (config.fast.rows)."""
        sql, columns = _settings_read(self.model)
        found = fetch_one(sql, [catalog.pk])
        if found is None:
            return StoredSettings(None, 0)
        row: Any = columns.instance(found)
        return StoredSettings(row.data, row.version)


@functools.cache
def _settings_read(model: type[models.Model]) -> tuple[str, Columns]:
    columns = Columns(model, "s", only=("id", "data", "version"))
    quote = connection.ops.quote_name
    catalog = column(model, "catalog")
    table = quote(model._meta.db_table)
    return f"SELECT {columns.sql()} FROM {table} s WHERE s.{catalog} = %s", columns


class SelectionSettingsChangeQuerySet(models.QuerySet):
    def history_of(self, catalog: Catalog) -> SelectionSettingsChangeQuerySet:
        """Every settings version of ``catalog``, newest first."""
        return self.filter(catalog=catalog).order_by("-version", "-id")
