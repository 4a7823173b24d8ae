"""The static query encoder kept in Postgres, for processes that share no state
directory (``QUIVER_QUERY_ENCODER_STORE=postgres``: the pods of a cluster).

A build saves the encoder's file as a row (``StoredQueryEncoder``) in the
transaction of its ``query_encoder`` audit event. Every process brings the newest
row for its model's weights into its own state directory, looking at most every
``RELOAD_SECONDS`` (copied in a thread of its own, so no request waits for it),
and the file loader (embeddings.static) takes it from there: the same
encoder, under the same id, in every pod. With no row there is no encoder, whatever
file a pod has. One build at a time is a Postgres advisory lock, not a file lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection, connections

from catalog.models import StoredQueryEncoder
from embeddings.static import RELOAD_SECONDS, encoder_id_of, partial_path

logger = logging.getLogger(__name__)
BUILD_LOCK = 7_310_002


def in_database() -> bool:
    return bool(settings.QUIVER_QUERY_ENCODER_STORE == "postgres")


def newest(weights_digest: str) -> tuple[int, str, int] | None:
    """(row id, encoder id, tools it learnt from) of the newest encoder built for
    these weights; None when none was."""
    rows = StoredQueryEncoder.objects.filter(weights_digest=weights_digest)
    found = rows.order_by("-id").values_list("id", "encoder_id", "trained_on")
    return found.first()


def save(weights_digest: str, data: bytes, encoder_id: str, trained_on: int) -> None:
    """Keep a built encoder's file (inside the caller's transaction)."""
    StoredQueryEncoder.objects.create(
        weights_digest=weights_digest,
        encoder_id=encoder_id,
        trained_on=trained_on,
        data=data,
    )


@contextmanager
def build_lock() -> Iterator[bool]:
    """Yields True to the one process, of every pod, holding the build lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [BUILD_LOCK])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [BUILD_LOCK])


@dataclass
class _Copy:
    """What this process last brought into one file, and when it looked."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    checked: float = float("-inf")
    running: threading.Thread | None = None


_COPIES: dict[Path, _Copy] = {}
_COPIES_LOCK = threading.Lock()


def refresh(path: Path, weights_digest: str, wait: bool) -> None:
    """Bring the newest stored encoder into ``path`` (a registered refresher of
    embeddings.static): in this thread when ``wait``, else in a thread of
    its own at most every ``RELOAD_SECONDS``."""
    if not in_database():
        return
    with _COPIES_LOCK:
        state = _COPIES.setdefault(path, _Copy())
    with state.lock:
        now = time.monotonic()
        if not wait and (now - state.checked < RELOAD_SECONDS or state.running):
            return
        state.checked = now
        if not wait:
            state.running = threading.Thread(
                target=_copy_in_thread,
                args=(state, path, weights_digest),
                name="static-encoder-copy",
                daemon=True,
            )
            state.running.start()
            return
    copy_newest(path, weights_digest)


def _copy_in_thread(state: _Copy, path: Path, weights_digest: str) -> None:
    try:
        copy_newest(path, weights_digest)
    finally:
        connections.close_all()  # this thread's own connection
        with state.lock:
            state.running = None


def copy_newest(path: Path, weights_digest: str) -> None:
    """Make ``path`` hold the newest stored encoder's file (written beside it and
    renamed over it), or remove it when none is stored. A database or disk that
    fails is logged: the file loader keeps what it has."""
    try:
        found = newest(weights_digest)
        if found is None:
            path.unlink(missing_ok=True)
            return
        row_id, encoder_id = found[0], found[1]
        if path.exists() and encoder_id_of(path.read_bytes()) == encoder_id:
            return
        data = StoredQueryEncoder.objects.values_list("data", flat=True).get(id=row_id)
        partial = partial_path(path)
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(bytes(data))
        partial.replace(path)
    except (DatabaseError, OSError) as exc:
        logger.warning("the stored static query encoder was not copied: %s", exc)
