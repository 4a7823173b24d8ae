"""Patch a ``CatalogSnapshot`` with a few changed tools instead of rebuilding it.

A large catalog's full build must not run inline on an edit: ``patch`` swaps,
removes and appends rows and patches the cached policy arrays, name maps, order
and vectors in O(changed) work, so policy facts are exact at once (a tool disabled
a moment ago is never offered). The BM25F index, which depends on catalog-wide
statistics, is rebuilt inline when small, else overlaid and rebuilt exactly in the
background (``rebuild_index``). Pure: no Django.
The rules: docs/explanation/selection.md, Patching a snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from selection.engine.delta import overlaid
from selection.engine.index import FIELD_TEXT, LexicalIndex
from selection.engine.snapshot import CatalogSnapshot, PolicyArrays
from selection.engine.types import ToolRecord
from selection.engine.vectors import VectorTable

CACHES = ("index", "by_name", "by_lower_name", "order", "arrays", "fusion")


@dataclass(frozen=True)
class Change:
    """Old rows to drop, old row -> new record, and records to append."""

    removed: frozenset[int]
    replaced: dict[int, ToolRecord]
    added: tuple[ToolRecord, ...]

    @property
    def empty(self) -> bool:
        return not (self.removed or self.replaced or self.added)


def with_caches(snapshot: CatalogSnapshot, **caches: object) -> CatalogSnapshot:
    """A copy of ``snapshot`` with its built caches, some replaced by ``caches``."""
    copy = replace(snapshot)
    for name in CACHES:
        if name in snapshot.__dict__:
            copy.__dict__[name] = snapshot.__dict__[name]
    copy.__dict__.update(caches)
    return copy


def patch(
    old: CatalogSnapshot,
    change: Change,
    *,
    version: str,
    vectors: VectorTable | None,
    inline_index_max: int,
) -> tuple[CatalogSnapshot, bool]:
    """The patched snapshot, and whether its lexical index is stale (the caller
    should then rebuild it with ``rebuild_index``)."""
    old.warm()
    keep = np.ones(len(old.tools), dtype=bool)
    keep[list(change.removed)] = False
    remap = np.cumsum(keep) - 1  # old row -> new row (for kept rows)
    tools = _without(old.tools, change.removed)
    top = old.tools[-1].position if old.tools else -1  # rows are in position order
    for row, record in change.replaced.items():
        tools[int(remap[row])] = replace(record, position=old.tools[row].position)
    tools += [replace(t, position=top + 1 + i) for i, t in enumerate(change.added)]
    new = replace(old, version=version, tools=tuple(tools), vectors=vectors)
    index, stale = _index(old, new, (change, keep, remap), inline_index_max)
    caches: dict[str, object] = {
        "arrays": _arrays(old, new, change, keep, remap),
        "order": np.arange(len(tools), dtype=np.int64),
        **_names(old, new, change),
    }
    if index is not None:
        caches["index"] = index
    fusion = old.fusion
    if fusion.agreement is not None:  # a catalog-wide mean: a few edits keep it
        caches["fusion"] = fusion.with_tools(new.tools)
    return with_caches(new, **caches), stale


def _without(tools: Sequence[ToolRecord], removed: frozenset[int]) -> list[ToolRecord]:
    """``tools`` less the ``removed`` rows, copied slice by slice (a few removed
    rows out of 100,000: C-level copies, not a Python test per row)."""
    out: list[ToolRecord] = []
    start = 0
    for row in sorted(removed):
        out.extend(tools[start:row])
        start = row + 1
    out.extend(tools[start:])
    return out


def rebuild_index(snapshot: CatalogSnapshot) -> CatalogSnapshot:
    """The same snapshot with a lexical index built from scratch (exact)."""
    s = snapshot.settings
    index = LexicalIndex(snapshot.tools, s.field_weights, s.bm25_k1, s.bm25_b)
    return with_caches(snapshot, index=index)


def _text_changed(old: CatalogSnapshot, change: Change) -> bool:
    if change.removed or change.added:
        return True
    return any(
        text_of(old.tools[row]) != text_of(record)
        for row, record in change.replaced.items()
        for text_of in FIELD_TEXT.values()
    )


def _index(
    old: CatalogSnapshot,
    new: CatalogSnapshot,
    rows: tuple[Change, np.ndarray, np.ndarray],
    inline_max: int,
) -> tuple[LexicalIndex | None, bool]:
    """(index to install, not exact?); None: let the snapshot build it on first
    use. A patched index stays patched until ``rebuild_index`` replaces it."""
    change, keep, remap = rows
    if not _text_changed(old, change):
        return old.index, old.index.base is not None
    if len(new.tools) <= inline_max:
        return None, False
    start = len(new.tools) - len(change.added)
    changed = {int(remap[r]): new.tools[int(remap[r])] for r in change.replaced}
    changed.update({start + i: t for i, t in enumerate(new.tools[start:])})
    return overlaid(old.index, keep, changed, len(new.tools)), True


def _names(
    old: CatalogSnapshot, new: CatalogSnapshot, change: Change
) -> dict[str, object]:
    """Name maps: reused when no name changed, extended for appended tools,
    rebuilt (on first use) after a removal or a rename."""
    renamed = any(old.tools[r].name != t.name for r, t in change.replaced.items())
    if change.removed or renamed:
        return {}
    if not change.added:
        return {"by_name": old.by_name, "by_lower_name": old.by_lower_name}
    by_name, by_lower = dict(old.by_name), dict(old.by_lower_name)
    start = len(new.tools) - len(change.added)
    for row, tool in enumerate(change.added, start=start):
        by_name.setdefault(tool.name, row)
        by_lower.setdefault(tool.name.lower(), row)
    return {"by_name": by_name, "by_lower_name": by_lower}


def _arrays(
    old: CatalogSnapshot,
    new: CatalogSnapshot,
    change: Change,
    keep: np.ndarray,
    remap: np.ndarray,
) -> PolicyArrays:
    """Policy columns and value -> rows maps, patched row by row."""
    a, settings = old.arrays, old.settings
    start = len(new.tools) - len(change.added)
    fresh = PolicyArrays.build(change.added, settings)
    columns: dict[str, np.ndarray] = {}
    for name in ("active", "held", "safe", "schema_ok", "cost", "tokens", "open_roles"):
        column = np.concatenate([getattr(a, name)[keep], getattr(fresh, name)])
        columns[name] = column
    touched = [int(remap[r]) for r in change.replaced]
    if touched:
        one = PolicyArrays.build(tuple(new.tools[r] for r in touched), settings)
        for name, column in columns.items():
            column[touched] = getattr(one, name)
    drop = np.array(sorted(set(change.removed) | set(change.replaced)), np.int64)
    maps: dict[str, dict[str, np.ndarray]] = {}
    for name, keys_of in KEYS.items():
        keys = {k for r in drop for k in keys_of(old.tools[int(r)])}
        rows = _moved(getattr(a, name), drop, remap, keys)
        _extend(rows, getattr(fresh, name), start)
        if touched:
            _extend(rows, getattr(one, name), 0, touched)
        maps[name] = rows
    return PolicyArrays(**columns, **maps)  # type: ignore[arg-type]


KEYS = {
    "role_rows": lambda t: t.allowed_roles,
    "capability_rows": lambda t: t.capabilities,
    "category_rows": lambda t: (t.category.lower(),),
}


def _moved(
    rows: dict[str, np.ndarray], drop: np.ndarray, remap: np.ndarray, keys: set[str]
) -> dict[str, np.ndarray]:
    """value -> rows without the dropped (old) rows, renumbered to new rows.

    ``keys``: the values the dropped rows held; when no row was removed, only
    those values' rows change (row numbers stay as they were)."""
    renumber = bool((remap != np.arange(len(remap))).any())
    out = dict(rows)
    for key in rows if renumber else keys & rows.keys():
        found = rows[key]
        if len(drop):
            found = found[~np.isin(found, drop)]
        if renumber:
            found = remap[found]
        if len(found):
            out[key] = found
        else:
            del out[key]
    return out


def _extend(
    rows: dict[str, np.ndarray],
    extra: dict[str, np.ndarray],
    offset: int,
    targets: Sequence[int] | None = None,
) -> None:
    """Add ``extra``'s rows (shifted by ``offset`` or mapped through ``targets``)."""
    for key, found in extra.items():
        moved = found + offset if targets is None else np.asarray(targets)[found]
        merged = np.concatenate([rows.get(key, np.zeros(0, np.int64)), moved])
        rows[key] = np.sort(merged).astype(np.int64)
