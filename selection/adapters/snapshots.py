"""Catalog snapshots for the engine, one per catalog per process, kept current.

The first request builds the snapshot from the catalog's tools (and, for small
enough catalogs, its vectors). After a change the next request patches it from the
catalog's change feed (``ToolChange`` rows after the last one applied) and checks a
checksum of the whole catalog; a mismatch (a change the feed missed) falls back to a
full rebuild, so a patched snapshot never differs from the database
(``selection.engine.patch`` says what is patched). Snapshots live in the process's
store (``selection.adapters.kept``), within its memory budget.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Sum

from catalog.models import Catalog, Tool, ToolChange
from catalog.spec import ToolSpec
from selection.adapters.index_child import fresh_index
from selection.adapters.kept import STORE, deep_size
from selection.adapters.snapshot_vectors import (
    Stamps,
    load_vectors,
    patch_vectors,
    with_vectors,
)
from selection.engine.patch import Change, patch
from selection.engine.records import record_from_dict
from selection.engine.settings import EngineSettings
from selection.engine.snapshot import CatalogSnapshot
from selection.models import SelectionSettings
from selection.querysets import StoredSettings
from selection.registry import learnt_signal
from telemetry import metrics

# The columns a record is built from: every ToolSpec field, read as plain values
# (no model instances, no ToolSpec.to_dict deep copies: at 100k tools those were
# over a third of the build).
RECORD_COLUMNS = (*ToolSpec.field_names(), "id", "prompt_tokens")
KIND = "snapshot"  # the store's kind of entry
_lock = threading.RLock()


@dataclass(frozen=True)
class Feed:
    """Where a snapshot stands: last change applied, its checksum, its vectors."""

    change_id: int
    checksum: tuple[int, int, int]
    versions: dict[int, int]  # tool id -> version (for the checksum)
    vectors_seen: Stamps | None  # tool id -> when its vector was written


@dataclass(frozen=True)
class Entry:
    key: tuple[int, str, int]
    model_id: str
    snapshot: CatalogSnapshot
    names: dict[int, str]  # tool id -> name
    feed: Feed
    generation: int
    stale_index: bool = False


_generations: weakref.WeakKeyDictionary[CatalogSnapshot, int] = (
    weakref.WeakKeyDictionary()
)
_counter = [0]
_rebuilding: dict[int, threading.Thread] = {}
_makers: dict[int, threading.Lock] = {}
# catalog id -> when its background index rebuild is due (time.monotonic()).
_due: dict[int, float] = {}


def kept_entry(catalog_id: int) -> Entry | None:
    """The catalog's snapshot entry this process keeps (not counted as a use)."""
    entry: Entry | None = STORE.peek((KIND, catalog_id))
    return entry


def get_snapshot(
    catalog: Catalog, stored: StoredSettings | None = None
) -> tuple[CatalogSnapshot, dict[int, str]]:
    """The snapshot of the catalog's current version and its id -> name map.
    ``stored``: the catalog's settings row when the caller read it with the
    catalog (calls.reads, one statement), else it is read here.

    A new catalog version patches the snapshot (or rebuilds it); readers of the
    old one keep it until they finish (snapshots are immutable). One thread of
    a process makes a catalog's snapshot at a time (the web workers are
    threaded): the others wait for it instead of building copies of it."""
    if stored is None:
        stored = SelectionSettings.objects.stored_for(catalog)
    settings_version = stored.version
    # The update time guards against a version number reused after a rollback
    # and moves when vectors land (catalog.services.embeddings).
    key = (catalog.version, catalog.updated.isoformat(), settings_version)
    cached: Entry | None = STORE.get((KIND, catalog.pk))
    if cached is not None and cached.key == key:
        return cached.snapshot, cached.names
    with _making(catalog.pk):
        cached = kept_entry(catalog.pk)
        if cached is not None and cached.key == key:  # made while this one waited
            return cached.snapshot, cached.names
        entry = None
        if cached is not None and _patchable(cached, catalog, settings_version):
            entry = _refresh(catalog, cached, key)
            if entry is not None:
                size = _patched_size(catalog.pk, cached, entry)
                _install(catalog.pk, entry, size, "patched")
        if entry is None:
            entry = _build(catalog, stored.effective(), key)
            _freeze()
            _install(catalog.pk, entry, deep_size(entry), "built")
    if entry.stale_index:
        _rebuild_later(catalog.pk, float(settings.QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY))
    return entry.snapshot, entry.names


def keep(catalog_id: int, entry: Entry) -> None:
    """Keep ``entry`` as the catalog's snapshot again, as it was made (a
    benchmark comparing two snapshots of one catalog swaps them)."""
    size = STORE.size((KIND, catalog_id)) or deep_size(entry)
    STORE.put((KIND, catalog_id), entry, size)


def _making(catalog_id: int) -> threading.Lock:
    """The lock held while a thread makes this catalog's snapshot."""
    with _lock:
        return _makers.setdefault(catalog_id, threading.Lock())


def cached_catalogs() -> set[int]:
    """The ids of the catalogs this process keeps a snapshot of."""
    return {int(str(catalog_id)) for catalog_id in STORE.keys(KIND)}


def _freeze() -> None:
    """Move everything alive (the new snapshot's ~10 objects per tool included)
    to the collector's permanent generation: later collections, and the first
    ones after an edit, no longer walk a 100,000-tool snapshot."""
    gc.collect()
    gc.freeze()


def snapshot_stamp(snapshot: CatalogSnapshot) -> str:
    """The snapshot's version plus its generation in this process: an answer
    cached on a snapshot whose index was later rebuilt is not served again."""
    return f"{snapshot.version}#{_generations.get(snapshot, 0)}"


def _patchable(entry: Entry, catalog: Catalog, settings_version: int) -> bool:
    return (
        entry.key[2] == settings_version
        and entry.model_id == catalog.active_embedding_model
    )


def _install(catalog_id: int, entry: Entry, size: int, how: str = "") -> Entry:
    """Keep ``entry`` (``size`` bytes) as the catalog's, under a new generation;
    ``how`` it was made, for the metrics (none: only its index changed)."""
    with _lock:
        _counter[0] += 1
        entry = Entry(**{**entry.__dict__, "generation": _counter[0]})
        _generations[entry.snapshot] = entry.generation
    STORE.put((KIND, catalog_id), entry, size)
    if how:
        metrics.snapshot_made(how)
    return entry


def _patched_size(catalog_id: int, old: Entry, new: Entry) -> int:
    """A patched entry's bytes: measured up to ``QUIVER_SNAPSHOT_INLINE_INDEX_MAX``
    tools; above, the old entry's scaled by the tools' count until the background
    index rebuild measures its new index (walking a large catalog's objects
    would hold up the edit's next request)."""
    tools = len(new.snapshot.tools)
    if tools <= int(settings.QUIVER_SNAPSHOT_INLINE_INDEX_MAX):
        return deep_size(new)
    kept = kept_entry(catalog_id) is old
    before = STORE.size((KIND, catalog_id)) if kept else deep_size(old)
    return before * tools // max(1, len(old.snapshot.tools))


def _version(catalog: Catalog, key: tuple[int, str, int]) -> str:
    return f"{catalog.version}.{key[2]}"


def _build(
    catalog: Catalog, engine_settings: EngineSettings, key: tuple[int, str, int]
) -> Entry:
    """A snapshot from scratch; the feed position is read first, so a change
    committed while the tools are read is applied (again) by the next refresh."""
    change_id = _last_change_id(catalog.pk)
    records, names, versions = [], {}, {}
    rows = Tool.objects.filter(catalog=catalog).order_by("id")
    rows = rows.values(*RECORD_COLUMNS, "version")
    for position, row in enumerate(rows.iterator(chunk_size=2000)):
        data: dict[str, Any] = row
        records.append(record_from_dict(data, row["id"], position))
        names[row["id"]] = row["name"]
        versions[row["id"]] = row["version"]
    tools = tuple(records)
    vectors, seen = load_vectors(catalog, tools, None, None)
    snapshot = CatalogSnapshot(
        catalog=catalog.slug,
        version=_version(catalog, key),
        tools=tools,
        settings=engine_settings,
        vectors=vectors,
        learnt=learnt_signal(catalog, engine_settings.learnt_model),
    )
    feed = Feed(change_id, _checksum_of(versions), versions, seen)
    model = catalog.active_embedding_model
    return Entry(key, model, snapshot.warm(), names, feed, 0)


def _last_change_id(catalog_id: int) -> int:
    found = ToolChange.objects.filter(catalog_id=catalog_id).aggregate(m=Max("id"))
    return int(found["m"] or 0)


def _checksum_of(versions: dict[int, int]) -> tuple[int, int, int]:
    return (len(versions), sum(versions), sum(versions.values()))


def _db_checksum(catalog_id: int) -> tuple[int, int, int]:
    found = Tool.objects.filter(catalog_id=catalog_id).aggregate(
        n=Count("id"), ids=Sum("id"), versions=Sum("version")
    )
    return (int(found["n"]), int(found["ids"] or 0), int(found["versions"] or 0))


def _refresh(catalog: Catalog, entry: Entry, key: tuple[int, str, int]) -> Entry | None:
    """The entry patched with the changes since it was made; None: rebuild."""
    changes = list(
        ToolChange.objects.filter(catalog_id=catalog.pk, id__gt=entry.feed.change_id)
        .order_by("id")
        .values_list("id", "tool_id", "tool_name")
    )
    if len(changes) > max(1_000, len(entry.snapshot.tools) // 10):
        return None  # a bulk change: one build is cheaper than many patches
    ids = {tool_id for _, tool_id, _ in changes if tool_id is not None}
    snapshot, names_changed = entry.snapshot, _names(changes)
    by_name = [snapshot.by_name.get(name) for name in names_changed]
    touched = ids | {snapshot.tools[row].id for row in by_name if row is not None}
    rows = _changed_rows(catalog.pk, ids, names_changed)
    versions = dict(entry.feed.versions)
    checksum = _moved_checksum(entry.feed, touched | rows.keys(), rows)
    for tool_id in touched - rows.keys():
        versions.pop(tool_id, None)
    versions.update({tool_id: row["version"] for tool_id, row in rows.items()})
    if not _complete(catalog, entry, len(changes)) and checksum != _db_checksum(
        catalog.pk
    ):
        return None  # the feed missed a change: never serve a stale tool
    change, names = _change(entry, rows, touched)
    last = max((change_id for change_id, _, _ in changes), default=None)
    return _patched(catalog, entry, key, (change, names, versions, last), checksum)


def _moved_checksum(
    feed: Feed, ids: set[int], rows: dict[int, dict[str, Any]]
) -> tuple[int, int, int]:
    """The feed's checksum with the changed tools' old entries replaced by their
    current rows (O(changed), not a sum over the whole catalog)."""
    count, id_sum, version_sum = feed.checksum
    for tool_id in ids:
        if tool_id in feed.versions:
            count, id_sum = count - 1, id_sum - tool_id
            version_sum -= feed.versions[tool_id]
        if tool_id in rows:
            count, id_sum = count + 1, id_sum + tool_id
            version_sum += int(rows[tool_id]["version"])
    return (count, id_sum, version_sum)


def _complete(catalog: Catalog, entry: Entry, count: int) -> bool:
    """Whether the changes read are provably all of them, without the checksum.

    Every service write records one change and bumps the catalog version by one
    in the same transaction, so the changes since the entry's version number
    exactly the version difference, if no write committed while they were read
    (the version is read again after them). Any other case (a change committed
    out of id order, a write without a change record, a batched bump) fails this
    and the caller compares the whole catalog's checksum instead."""
    if count != catalog.version - entry.key[0]:
        return False
    now = Catalog.objects.filter(pk=catalog.pk).values_list("version", flat=True)
    return list(now) == [catalog.version]


def _names(changes: Sequence[tuple[int, int | None, str]]) -> set[str]:
    return {name for _, _, name in changes}


def _changed_rows(
    catalog_id: int, ids: set[int], names: set[str]
) -> dict[int, dict[str, Any]]:
    """Current rows of the tools the changes name (by id, or by name for deletes)."""
    if not ids and not names:
        return {}
    found = Tool.objects.filter(catalog_id=catalog_id).filter(
        id__in=ids
    ) | Tool.objects.filter(catalog_id=catalog_id, name__in=names)
    rows = found.values(*RECORD_COLUMNS, "version")
    return {row["id"]: row for row in rows}


def _change(
    entry: Entry, rows: dict[int, dict[str, Any]], touched: set[int]
) -> tuple[Change, dict[int, str]]:
    """Which snapshot rows go, which are replaced, which tools are new."""
    snapshot = entry.snapshot
    row_of = {
        i: snapshot.by_name[entry.names[i]]
        for i in touched | rows.keys()
        if i in entry.names
    }
    removed = frozenset(row_of[i] for i in touched - rows.keys() if i in row_of)
    replaced = {
        row_of[i]: record_from_dict(data, i, row_of[i])
        for i, data in rows.items()
        if i in row_of
    }
    added = tuple(
        record_from_dict(rows[i], i, 0) for i in sorted(rows) if i not in row_of
    )
    names = dict(entry.names)
    for row in removed:
        names.pop(entry.snapshot.tools[row].id, None)
    names.update({i: str(data["name"]) for i, data in rows.items()})
    return Change(removed, replaced, added), names


def _patched(
    catalog: Catalog,
    entry: Entry,
    key: tuple[int, str, int],
    parts: tuple[Change, dict[int, str], dict[int, int], int | None],
    checksum: tuple[int, int, int],
) -> Entry:
    change, names, versions, last = parts
    old = entry.snapshot
    snapshot, stale = patch(
        old,
        change,
        version=_version(catalog, key),
        vectors=None,
        inline_index_max=int(settings.QUIVER_SNAPSHOT_INLINE_INDEX_MAX),
    )
    changed_ids = {t.id for t in change.replaced.values()} | {
        t.id for t in change.added
    }
    before = (entry.snapshot, entry.feed.vectors_seen)
    vectors, seen = patch_vectors(catalog, before, snapshot, change, changed_ids)
    snapshot = with_vectors(snapshot, vectors)
    feed = Feed(
        entry.feed.change_id if last is None else last, checksum, versions, seen
    )
    return Entry(key, entry.model_id, snapshot, names, feed, 0, stale)


def _rebuild_later(catalog_id: int, delay: float) -> None:
    """Rebuild the lexical index exactly in a thread, ``delay`` seconds from now
    (edits meanwhile are patched, and folded into the one rebuild); install it if
    still current. A sooner call moves the rebuild earlier, never later."""
    due = time.monotonic() + delay
    with _lock:
        _due[catalog_id] = min(_due.get(catalog_id, due), due)
        running = _rebuilding.get(catalog_id)
        if running is not None and running.is_alive():
            return  # it reads the due time again before it builds
        thread = threading.Thread(
            target=_rebuild, args=(catalog_id,), daemon=True, name="snapshot-index"
        )
        _rebuilding[catalog_id] = thread
    thread.start()


def _rebuild(catalog_id: int) -> None:
    """Each time a rebuild falls due: build a fresh index and swap it in."""
    while _wait_until_due(catalog_id):
        _rebuild_now(catalog_id)


def _wait_until_due(catalog_id: int) -> bool:
    """Sleep until the catalog's rebuild is due (True), or find none is (False: the
    thread then leaves ``_rebuilding`` under the same lock, so a later request
    starts a new one instead of counting on this one)."""
    while True:
        with _lock:
            due = _due.get(catalog_id)
            if due is None or kept_entry(catalog_id) is None:
                _due.pop(catalog_id, None)
                _rebuilding.pop(catalog_id, None)
                return False
            if time.monotonic() >= due:
                del _due[catalog_id]
                return True
        time.sleep(min(0.1, max(due - time.monotonic(), 0.0)))


def _rebuild_now(catalog_id: int) -> None:
    """Until the current snapshot's index is fresh: build one and swap it in."""
    while True:
        entry = kept_entry(catalog_id)
        if entry is None or not entry.stale_index:
            return
        fresh = fresh_index(entry.snapshot)
        # The entry's bytes with the patched index swapped for the exact one.
        size = STORE.size((KIND, catalog_id)) + deep_size(fresh.index)
        size -= deep_size(entry.snapshot.index)
        with _lock:
            if kept_entry(catalog_id) is entry:
                done = {"snapshot": fresh, "stale_index": False}
                _install(catalog_id, Entry(**{**entry.__dict__, **done}), size)
                gc.freeze()
                return


def wait_for_rebuilds(timeout: float = 60.0) -> None:
    """Block until background index rebuilds finish (tests and benchmarks)."""
    for thread in list(_rebuilding.values()):
        thread.join(timeout)


def clear() -> None:
    """Forget every snapshot this process keeps (tests and benchmarks)."""
    with _lock:
        STORE.clear(KIND)
        _due.clear()
