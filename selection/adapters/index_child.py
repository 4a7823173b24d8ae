"""A large catalog's lexical index rebuilt exactly in a forked child process.

A thread would share the GIL with the requests for the whole build (seconds at
100,000 tools, making each request meanwhile many times slower); the child
inherits the snapshot by fork (nothing copied up front) and sends back only the
index. A child forked from a process with other threads can hang on a lock one
of them held at the fork: one that sends nothing within
``QUIVER_SNAPSHOT_INDEX_CHILD_TIMEOUT_S`` is killed and the index is built here
instead, so a rebuild never waits forever."""

from __future__ import annotations

import multiprocessing
import os
import threading
from typing import Any

from django.conf import settings

from selection.engine.patch import rebuild_index, with_caches
from selection.engine.snapshot import CatalogSnapshot

_to_index: list[CatalogSnapshot] = []
_forking = threading.Lock()


def fresh_index(snapshot: CatalogSnapshot) -> CatalogSnapshot:
    """The snapshot with a fresh lexical index, built in a child when the
    platform forks."""
    if not hasattr(os, "fork"):
        return rebuild_index(snapshot)
    with _forking:  # one child at a time: it finds its snapshot in _to_index
        return _in_child(snapshot)


def _in_child(snapshot: CatalogSnapshot) -> CatalogSnapshot:
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    _to_index[:] = [snapshot]
    child = context.Process(target=_index_child, args=(writer,), daemon=True)
    child.start()
    writer.close()
    try:
        if not reader.poll(float(settings.QUIVER_SNAPSHOT_INDEX_CHILD_TIMEOUT_S)):
            raise TimeoutError("the index child sent nothing in time")
        index = reader.recv()
    except (EOFError, OSError):  # the child died or hung: build it here instead
        return rebuild_index(snapshot)
    finally:
        reader.close()
        child.join(timeout=1.0)
        if child.is_alive():
            child.kill()
            child.join()
        _to_index.clear()
    return with_caches(snapshot, index=index)


def _index_child(writer: Any) -> None:
    """In the forked child: build the index of the inherited snapshot, send it,
    and leave at once: no exit handlers, no flushing of streams whose locks
    another thread of the parent may have held at the fork."""
    try:
        writer.send(rebuild_index(_to_index[0]).index)
        writer.close()
    finally:
        os._exit(0)
