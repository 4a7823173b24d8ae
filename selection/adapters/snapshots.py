"""Catalog snapshots for the engine, built once per (catalog, version) per process."""

from __future__ import annotations

import threading
from typing import Any

from catalog.models import Catalog, Tool
from catalog.spec import ToolSpec
from selection.engine.records import record_from_dict
from selection.engine.settings import EngineSettings
from selection.engine.snapshot import CatalogSnapshot
from selection.models import SelectionSettings

# The columns a record is built from: every ToolSpec field, read as plain values
# (no model instances, no ToolSpec.to_dict deep copies: at 100k tools those were
# over a third of the build).
RECORD_COLUMNS = (*ToolSpec.field_names(), "id", "prompt_tokens")
_lock = threading.Lock()
_cache: dict[int, tuple[tuple[int, str, int], CatalogSnapshot, dict[int, str]]] = {}


def get_snapshot(catalog: Catalog) -> tuple[CatalogSnapshot, dict[int, str]]:
    """The snapshot of the catalog's current version and its id -> name map.

    A new catalog or settings version builds a new snapshot; readers of the old
    one keep it until they finish (snapshots are immutable)."""
    engine_settings, settings_version = SelectionSettings.objects.effective_for(catalog)
    # The update time guards against a version number reused after a rollback.
    key = (catalog.version, catalog.updated.isoformat(), settings_version)
    cached = _cache.get(catalog.pk)
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    snapshot, names = _build(catalog, engine_settings, settings_version)
    with _lock:
        _cache[catalog.pk] = (key, snapshot, names)
    return snapshot, names


def _build(
    catalog: Catalog, engine_settings: EngineSettings, settings_version: int
) -> tuple[CatalogSnapshot, dict[int, str]]:
    records = []
    names: dict[int, str] = {}
    rows = Tool.objects.filter(catalog=catalog).order_by("id").values(*RECORD_COLUMNS)
    for position, row in enumerate(rows.iterator(chunk_size=2000)):
        data: dict[str, Any] = row
        records.append(record_from_dict(data, row["id"], position))
        names[row["id"]] = row["name"]
    snapshot = CatalogSnapshot(
        catalog=catalog.slug,
        version=f"{catalog.version}.{settings_version}",
        tools=tuple(records),
        settings=engine_settings,
    )
    return snapshot.warm(), names


def clear() -> None:
    with _lock:
        _cache.clear()
