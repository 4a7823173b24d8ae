"""The sealer: gives appended rows their place in the chain and their hash.

``record_event`` only INSERTs, inside the caller's transaction, and takes no lock, so
concurrent selections never wait on each other. The sealer takes the one chain lock,
reads the committed unsealed rows in id order and assigns each the next ``seq``, the
previous row's hash and its own HMAC.

Why a sealer-assigned ``seq`` and not id order: ids come from a sequence and commit out
of order (id 7 may commit after id 8). Sealing "only a gap-free prefix of ids" needs a
guess about in-flight transactions (snapshot xmin races the moment an INSERT takes its
id; a grace period is a timing bet). With ``seq`` the chain order is the order rows
became visible to the sealer, which is final the moment they are sealed: a late commit
simply gets the next seq. No row is skipped, none is sealed twice (the trigger allows
the sealing update once), and no timing assumption is needed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from audit.hashing import CONTENT_SQL, GENESIS, KEYED, audit_key, key_id, keyed_hash
from audit.rollup import roll_up

log = logging.getLogger(__name__)

# One lock for the whole chain: sealers and checkpoints take it, writers never do.
CHAIN_LOCK = 7_310_001
SEAL_BATCH = 2000


def take_chain_lock(cursor: CursorWrapper, wait: bool) -> bool:
    if wait:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK])
        return True
    cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [CHAIN_LOCK])
    return bool(cursor.fetchone()[0])


def chain_head(cursor: CursorWrapper) -> tuple[int, int, str]:
    """(seq, id, hash) of the last sealed row; (0, 0, GENESIS) for an empty chain."""
    cursor.execute(
        "SELECT seq, id, hash FROM audit_auditevent WHERE seq IS NOT NULL "
        "ORDER BY seq DESC LIMIT 1"
    )
    row = cursor.fetchone()
    return (int(row[0]), int(row[1]), str(row[2])) if row else (0, 0, GENESIS)


def _hash_rows(
    rows: Sequence[Sequence[object]], seq: int, prev: str
) -> tuple[list[int], list[int], list[str], list[str]]:
    key = audit_key()
    ids, seqs, prevs, hashes = [], [], [], []
    for row in rows:
        seq += 1
        row_id = int(str(row[0]))
        digest = keyed_hash(key, seq, row_id, prev, [str(v) for v in row[1:]])
        ids.append(row_id)
        seqs.append(seq)
        prevs.append(prev)
        hashes.append(digest)
        prev = digest
    return ids, seqs, prevs, hashes


def _seal_batch(wait: bool, batch: int) -> int | None:
    with transaction.atomic(), connection.cursor() as cursor:
        if not take_chain_lock(cursor, wait):
            return None
        seq, _, prev = chain_head(cursor)
        cursor.execute(
            f"SELECT id, {CONTENT_SQL} FROM audit_auditevent "
            "WHERE hash IS NULL ORDER BY id LIMIT %s",
            [batch],
        )
        rows = cursor.fetchall()
        if rows:
            ids, seqs, prevs, hashes = _hash_rows(rows, seq, prev)
            cursor.execute(
                "UPDATE audit_auditevent AS a SET seq = v.seq, prev_hash = v.prev, "
                "hash = v.hash, hash_version = %s, key_id = %s, sealed_at = now() "
                "FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[]) "
                "AS v(id, seq, prev, hash) WHERE a.id = v.id",
                [KEYED, key_id(), ids, seqs, prevs, hashes],
            )
            seq = seqs[-1]
        # The dashboard's summary moves with the seal, in the same transaction.
        roll_up(cursor, seq)
        return len(rows)


def seal_pending(*, wait: bool = True, batch: int = SEAL_BATCH) -> int:
    """Seal every committed unsealed row, oldest id first; return how many.

    With ``wait=False`` it gives up at once when another sealer holds the lock (that
    one seals the same rows), so a read never queues behind a sealer."""
    total = 0
    while True:
        sealed = _seal_batch(wait, batch)
        if sealed is None:
            return total
        total += sealed
        if sealed < batch:
            return total


def seal_and_checkpoint() -> int:
    """One sealer round: seal, then write a checkpoint if one is due."""
    from audit.checkpoints import checkpoint_if_due

    sealed = seal_pending()
    checkpoint_if_due()
    return sealed


def _loop(stop: threading.Event, interval: float) -> None:
    from django.db import close_old_connections, connections

    while not stop.wait(interval):
        try:
            seal_and_checkpoint()
        except Exception:  # a bad round must not end the sealer; the next retries
            log.exception("audit sealer round failed")
        finally:
            close_old_connections()
    connections.close_all()


class SealerThread:
    """The sealer in a daemon thread, every ``interval`` seconds, until stopped."""

    def __init__(self, interval: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_loop, args=(self._stop, interval), name="audit-sealer", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def start_sealer_thread(interval: float) -> SealerThread:
    return SealerThread(interval)
