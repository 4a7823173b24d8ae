"""Catalog snapshots for the engine, built once per (catalog, version) per process."""

from __future__ import annotations

import threading
from typing import Any

from catalog.models import Catalog, Tool
from catalog.services.tools import tool_to_spec
from selection.engine.records import record_from_dict
from selection.engine.settings import EngineSettings
from selection.engine.snapshot import CatalogSnapshot
from selection.models import SelectionSettings

_lock = threading.Lock()
_cache: dict[int, tuple[tuple[int, str, int], CatalogSnapshot, dict[int, str]]] = {}


def settings_for(catalog: Catalog) -> tuple[EngineSettings, int]:
    row = SelectionSettings.objects.filter(catalog=catalog).first()
    if row is None:
        return EngineSettings(), 0
    return EngineSettings.from_dict(row.data), row.version


def get_snapshot(catalog: Catalog) -> tuple[CatalogSnapshot, dict[int, str]]:
    """The snapshot of the catalog's current version and its id -> name map.

    A new catalog or settings version builds a new snapshot; readers of the old
    one keep it until they finish (snapshots are immutable)."""
    engine_settings, settings_version = settings_for(catalog)
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
    tools = Tool.objects.filter(catalog=catalog).order_by("id")
    for position, tool in enumerate(tools.iterator(chunk_size=2000)):
        data: dict[str, Any] = tool_to_spec(tool).to_dict()
        data["prompt_tokens"] = tool.prompt_tokens
        records.append(record_from_dict(data, tool.pk, position))
        names[tool.pk] = tool.name
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
