"""What one process keeps for the catalogs it answers, within one memory budget.

A web worker answers for every catalog of its stack, and what it keeps for them
(snapshots, indexes, vectors, learnt signals, cached answers) would otherwise grow
with every catalog it ever answered. So everything is kept here, measured as it
comes in, and past ``QUIVER_MEMORY_BUDGET_MB`` the least recently used entries go
(the entry just kept stays). Evicting drops only this store's reference: a request
holding a snapshot finishes with it, and the next one builds it again from Postgres.
The metrics: docs/reference/metrics.md (``quiver_catalog_memory_*``).
"""

from __future__ import annotations

import gc
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings

from telemetry import metrics

# What a walk never enters: code and classes are the program's, not an entry's.
NOT_AN_ENTRY = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
)
MB = 1024 * 1024
Key = tuple[str, Hashable]  # (kind, key within the kind)


def deep_size(root: object, *, stop: tuple[type, ...] = ()) -> int:
    """Bytes of every object reachable from ``root``, each counted once: the
    objects' own sizes (``sys.getsizeof``; a numpy array owning its buffer counts
    it, a view counts its base once). Instances of ``stop`` are not entered (what
    another entry of the store holds). tests/selection/test_kept_memory.py holds
    it near what tracemalloc counts for the same snapshot's build."""
    skipped = (*NOT_AN_ENTRY, *stop)
    seen: set[int] = set()
    total, todo = 0, [root]
    size_of, referents = sys.getsizeof, gc.get_referents
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, skipped):
            continue
        seen.add(id(obj))
        total += size_of(obj)
        if isinstance(obj, np.ndarray):
            if obj.base is not None:
                todo.append(obj.base)
            continue
        todo.extend(referents(obj))
    return total


@dataclass
class Item:
    value: Any
    size: int


class Store:
    """Entries by (kind, key), least recently used first, their sizes summed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, Item] = OrderedDict()
        self._by_kind: dict[str, OrderedDict[Key, None]] = {}
        self._bytes: dict[str, int] = {}

    @staticmethod
    def budget() -> int:
        return int(float(settings.QUIVER_MEMORY_BUDGET_MB) * MB)

    def get(self, key: Key) -> Any | None:
        """The entry's value (now the most recently used), or None."""
        with self._lock:
            item = self._entries.get(key)
            if item is None:
                return None
            self._entries.move_to_end(key)
            self._by_kind[key[0]].move_to_end(key)
            return item.value

    def peek(self, key: Key) -> Any | None:
        """The entry's value without counting it as a use."""
        item = self._entries.get(key)
        return None if item is None else item.value

    def put(self, key: Key, value: Any, size: int, *, most: int | None = None) -> None:
        """Keep ``value`` as ``key`` (replacing any), then evict: the oldest of
        its kind past ``most`` entries of that kind, and the oldest of any kind
        while the total is over the budget."""
        with self._lock:
            self._drop(key)
            self._entries[key] = Item(value, size)
            self._by_kind.setdefault(key[0], OrderedDict())[key] = None
            self._bytes[key[0]] = self._bytes.get(key[0], 0) + size
            kind = self._by_kind[key[0]]
            while most is not None and len(kind) > most:
                self._evict(next(iter(kind)))
            budget = self.budget()
            while sum(self._bytes.values()) > budget and len(self._entries) > 1:
                oldest = next(iter(self._entries))
                self._evict(oldest if oldest != key else list(self._entries)[1])
            self._report(budget)

    def pop(self, key: Key) -> None:
        with self._lock:
            self._drop(key)
            self._report(self.budget())

    def keys(self, kind: str) -> list[Hashable]:
        with self._lock:
            return [key[1] for key in self._by_kind.get(kind, ())]

    def size(self, key: Key) -> int:
        item = self._entries.get(key)
        return 0 if item is None else item.size

    def kept_bytes(self, kind: str | None = None) -> int:
        with self._lock:
            if kind is not None:
                return self._bytes.get(kind, 0)
            return sum(self._bytes.values())

    def clear(self, kind: str | None = None) -> None:
        """Forget every entry (of ``kind``): not an eviction."""
        with self._lock:
            for key in [k for k in self._entries if kind in (None, k[0])]:
                self._drop(key)
            self._report(self.budget())

    def _evict(self, key: Key) -> None:
        self._drop(key)
        metrics.memory_evicted(key[0])

    def _drop(self, key: Key) -> None:
        item = self._entries.pop(key, None)
        if item is None:
            return
        self._by_kind[key[0]].pop(key, None)
        self._bytes[key[0]] -= item.size

    def _report(self, budget: int) -> None:
        metrics.memory_kept(budget, self._bytes, len(self._by_kind.get("snapshot", ())))


STORE = Store()
