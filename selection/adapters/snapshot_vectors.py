"""A snapshot's tool vectors, read from pgvector's table (in-process catalogs:
up to ``QUIVER_INPROCESS_VECTORS_MAX`` tools): all of them when a snapshot is
built, and only those written since when one is patched. Nothing is computed
here: every vector is read as the embedding job stored it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection

from catalog.models import Catalog
from selection.engine.patch import Change, with_caches
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.vectors import VectorTable

# Vectors written up to this long before the newest one seen are read again on
# the next refresh: an embedding transaction may commit after a later one.
VECTOR_MARGIN = dt.timedelta(minutes=2)
Stamps = dict[int, dt.datetime]


def with_vectors(
    snapshot: CatalogSnapshot, vectors: VectorTable | None
) -> CatalogSnapshot:
    copy = with_caches(snapshot)
    object.__setattr__(copy, "vectors", vectors)
    return copy


def patch_vectors(
    catalog: Catalog,
    old: tuple[CatalogSnapshot, Stamps | None],
    snapshot: CatalogSnapshot,
    change: Change,
    changed_ids: set[int],
) -> tuple[VectorTable | None, Stamps | None]:
    """The old snapshot's vectors re-aligned to the new rows, with the changed
    tools' and the newly written vectors read again (all of them when there
    were none); ``old``: the old snapshot and when its vectors were written."""
    before, seen = old
    table = before.vectors
    if table is None:
        return load_vectors(catalog, snapshot.tools, None, None)
    if len(snapshot.tools) > int(settings.QUIVER_INPROCESS_VECTORS_MAX):
        return None, None
    keep = [r not in change.removed for r in range(len(before.tools))]
    moved = table.patched(np.array(keep, dtype=bool), {}, len(change.added))
    return load_vectors(catalog, snapshot.tools, (moved, changed_ids), seen)


def load_vectors(
    catalog: Catalog,
    tools: tuple[Any, ...],
    base: tuple[VectorTable, set[int]] | None,
    seen: Stamps | None,
) -> tuple[VectorTable | None, Stamps | None]:
    """The active model's vectors for the rows of ``tools`` (in-process catalogs
    only): all of them, or ``base`` plus the vectors written since the newest one
    ``seen`` (less a margin) that it does not hold yet."""
    model_id = catalog.active_embedding_model
    limit = int(settings.QUIVER_INPROCESS_VECTORS_MAX)
    if not model_id or not tools or len(tools) > limit:
        return None, None
    row_of = {tool.id: row for row, tool in enumerate(tools)}
    if base is None or seen is None:
        rows = _vector_rows(catalog.pk, model_id, None)
        found = {row_of[t]: v for t, v, _ in rows if t in row_of}
        dimension = len(rows[0][1]) if rows else 0
        table = VectorTable.build(model_id, dimension, len(tools), found)
        return table, {t: written for t, _, written in rows if t in row_of}
    newest = max(seen.values(), default=None)
    since = (newest - VECTOR_MARGIN) if newest else None
    stamps = {t: w for t, w in _vector_stamps(catalog.pk, model_id, since, base[1])}
    wanted = [t for t, w in stamps.items() if seen.get(t) != w and t in row_of]
    rows = _vector_rows(catalog.pk, model_id, wanted) if wanted else []
    replaced = {row_of[t]: v for t, v, _ in rows}
    kept = {t: w for t, w in seen.items() if t in row_of}
    kept.update({t: w for t, _, w in rows})
    return base[0].patched(np.ones(len(tools), bool), replaced, 0), kept


def _vector_stamps(
    catalog_id: int, model_id: str, since: dt.datetime | None, ids: set[int]
) -> list[tuple[int, dt.datetime]]:
    """(tool id, written) of the vectors written since a time, or of some tools."""
    sql = (
        "SELECT tool_id, created FROM catalog_toolembedding "
        "WHERE catalog_id = %s AND model_id = %s AND (created >= %s OR tool_id = "
        "ANY(%s))"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [catalog_id, model_id, since, sorted(ids)])
        return [(int(t), written) for t, written in cursor.fetchall()]


def _vector_rows(
    catalog_id: int, model_id: str, ids: list[int] | None
) -> list[tuple[int, np.ndarray, dt.datetime]]:
    """(tool id, vector, written) of the catalog's vectors of one model (all, or
    those of some tools), read in pgvector's binary form (``vector_send``: 4
    header bytes, then big-endian float32), far faster than parsing text."""
    sql = (
        "SELECT tool_id, vector_send(embedding), created "
        "FROM catalog_toolembedding WHERE catalog_id = %s AND model_id = %s"
    )
    params: list[Any] = [catalog_id, model_id]
    if ids is not None:
        sql += " AND tool_id = ANY(%s)"
        params.append(ids)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [
            (int(t), np.frombuffer(bytes(raw), dtype=">f4", offset=4), written)
            for t, raw, written in cursor.fetchall()
        ]
