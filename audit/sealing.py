"""The sealer: gives appended rows their place in the chain and their hash.

``record_event`` only INSERTs, inside the caller's transaction, and takes no lock, so
concurrent selections never wait on each other. The sealer takes the one chain lock,
reads the committed unsealed rows in id order and assigns each the next ``seq``, the
previous row's hash and its own HMAC, each round bounded in time so the chain never
waits behind one row.
Why ``seq`` and not id order, and the round's budget: docs/explanation/audit-chain.md,
Sealing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.db import OperationalError, connection, transaction
from django.db.backends.utils import CursorWrapper
from psycopg.errors import QueryCanceled

from audit.hashing import CONTENT_SQL, GENESIS, KEYED, audit_key, key_id, keyed_hash
from audit.rollup import roll_up

log = logging.getLogger(__name__)

# One lock for the whole chain: sealers and checkpoints take it, writers never do.
CHAIN_LOCK = 7_310_001
SEAL_BATCH = 2000
# The time one batch's sealing UPDATE may take before it is cut (see above).
SEAL_BUDGET_MS = 1_000
# The prefixes of a row's texts whose trigrams a row past the budget is sealed with.
SHORT_TOKEN_CHARS = (200, 0)
# A reader seals what is pending before it reads, in batches this small, for at
# most this long: the rest is the sealer's (a read answers in about its quiet time
# while a backlog seals, and never runs into the web server's timeout).
READER_BATCH = 100
READER_BUDGET_S = 0.25


def take_chain_lock(cursor: CursorWrapper, wait: bool) -> bool:
    if wait:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK])
        return True
    cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [CHAIN_LOCK])
    return bool(cursor.fetchone()[0])


def head_key_id(cursor: CursorWrapper) -> str:
    """The key the chain's last sealed row was sealed with ("" for none)."""
    cursor.execute(
        "SELECT key_id FROM audit_auditevent WHERE seq IS NOT NULL "
        "ORDER BY seq DESC LIMIT 1"
    )
    row = cursor.fetchone()
    return str(row[0] or "") if row else ""


_warned_at = [float("-inf")]


def may_extend(head_key: str, handover: str = "") -> bool:
    """Whether this process may seal after a head sealed with ``head_key``: only
    with the key that sealed it (or a rotation handing over from it). A process
    whose key differs, such as a pod the rotated key has not reached yet (a
    Kubernetes Secret takes a while), leaves the rows to one that has it, rather
    than seal after the rotation with the key it retired. Warned once a minute."""
    if head_key in ("", key_id(), handover):
        return True
    if time.monotonic() - _warned_at[0] >= 60:
        _warned_at[0] = time.monotonic()
        log.warning(
            "audit chain head sealed with key %s, not this process's key %s: left "
            "to a process that has it (after audit_rotate_key --new-key-file, put "
            "the new key in place)",
            head_key,
            key_id(),
        )
    return False


def chain_head(cursor: CursorWrapper) -> tuple[int, int, str]:
    """(seq, id, hash) of the last sealed row; (0, 0, GENESIS) for an empty chain."""
    cursor.execute(
        "SELECT seq, id, hash FROM audit_auditevent WHERE seq IS NOT NULL "
        "ORDER BY seq DESC LIMIT 1"
    )
    row = cursor.fetchone()
    return (int(row[0]), int(row[1]), str(row[2])) if row else (0, 0, GENESIS)


Hashed = tuple[list[int], list[int], list[str], list[str]]


def _hash_rows(rows: Sequence[Sequence[object]], seq: int, prev: str) -> Hashed:
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


_SEAL_SQL = (
    "UPDATE audit_auditevent AS a SET seq = v.seq, prev_hash = v.prev, "
    "hash = v.hash, hash_version = %s, key_id = %s, sealed_at = now() "
    "FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[]) "
    "AS v(id, seq, prev, hash) WHERE a.id = v.id"
)


class _OutOfTime(Exception):
    """The caller's own budget (a reader's) ended: the rest is the sealer's."""


class _Clock:
    """How long one sealing statement may run: ``SEAL_BUDGET_MS``, or what is left
    of the caller's budget when that is less."""

    def __init__(self, budget_s: float | None) -> None:
        self.deadline = None if budget_s is None else time.monotonic() + budget_s

    def statement_ms(self) -> int:
        if self.deadline is None:
            return SEAL_BUDGET_MS
        left = int((self.deadline - time.monotonic()) * 1000)
        if left < 1:
            raise _OutOfTime
        return min(SEAL_BUDGET_MS, left)

    def over(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline


def _within(cursor: CursorWrapper, clock: _Clock, params: Sequence[list[Any]]) -> bool:
    """The sealing UPDATE in a savepoint under the clock's time; False (nothing
    done) when it ran past ``SEAL_BUDGET_MS``, ``_OutOfTime`` when it ran past a
    shorter time left to the caller (a slow row is the sealer's to judge)."""
    limit = clock.statement_ms()
    try:
        with transaction.atomic():
            cursor.execute(
                "SELECT current_setting('statement_timeout'), "
                "set_config('statement_timeout', %s, true)",
                [f"{limit}ms"],
            )
            before = cursor.fetchone()[0]
            cursor.execute(_SEAL_SQL, [KEYED, key_id(), *params])
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [before])
    except OperationalError as exc:
        if not isinstance(exc.__cause__, QueryCanceled):
            raise
        if limit < SEAL_BUDGET_MS:
            raise _OutOfTime from exc
        return False
    return True


def _seal_rows(cursor: CursorWrapper, hashed: Hashed, clock: _Clock) -> int:
    """Seal the longest prefix of ``hashed`` that fits the budget (halving it);
    0 when not even its first row does, with any prefix of its texts."""
    count = len(hashed[0])
    while count:
        if _within(cursor, clock, [column[:count] for column in hashed]):
            return count
        if count == 1:
            break
        count //= 2
    first = [column[:1] for column in hashed]
    for chars in SHORT_TOKEN_CHARS:
        log.warning("audit row %s past the sealing budget: trying the trigrams of "
                    "%s characters", hashed[0][0], chars)  # fmt: skip
        cursor.execute(
            "SELECT set_config('quiver.audit_token_chars', %s, true)", [str(chars)]
        )
        sealed = _within(cursor, clock, first)
        cursor.execute("SELECT set_config('quiver.audit_token_chars', '', true)")
        if sealed:
            return 1
    return 0


def _seal_batch(
    wait: bool, batch: int, skip: set[int], clock: _Clock, handover: str
) -> tuple[int, int] | None:
    """(rows sealed, rows read) of one batch in one transaction; None when another
    sealer holds the lock, or the chain's head was sealed with another key than
    this process's (``may_extend``). A row that could not be sealed is added to
    ``skip``."""
    with transaction.atomic(), connection.cursor() as cursor:
        if not take_chain_lock(cursor, wait):
            return None
        if not may_extend(head_key_id(cursor), handover):
            return None
        seq, _, prev = chain_head(cursor)
        cursor.execute(
            f"SELECT id, {CONTENT_SQL} FROM audit_auditevent "
            "WHERE hash IS NULL AND NOT (id = ANY(%s)) ORDER BY id LIMIT %s",
            [sorted(skip), batch],
        )
        rows = cursor.fetchall()
        sealed = 0
        if rows:
            hashed = _hash_rows(rows, seq, prev)
            sealed = _seal_rows(cursor, hashed, clock)
            if sealed == 0:
                log.error("audit row %s not sealed: past the budget", hashed[0][0])
                skip.add(hashed[0][0])
            else:
                seq = hashed[1][sealed - 1]
        # The dashboard's summary moves with the seal, in the same transaction.
        roll_up(cursor, seq)
        return sealed, len(rows)


def seal_pending(
    *,
    wait: bool = True,
    batch: int | None = None,
    budget_s: float | None = None,
    handover: str = "",
) -> int:
    """Seal every committed unsealed row, oldest id first; return how many.

    With ``wait=False`` (a reader: the audit list, export, verify) it gives up at
    once when another sealer holds the lock (that one seals the same rows), so a
    read never queues behind a sealer, and it seals batches of ``READER_BATCH``
    for at most ``READER_BUDGET_S`` (or ``budget_s``): the rest is the sealer's.
    A batch past ``SEAL_BUDGET_MS`` is sealed in smaller ones. ``handover``: the
    key a rotation retires, after whose rows the new key may seal."""
    if not wait:
        budget_s = READER_BUDGET_S if budget_s is None else budget_s
        batch = batch or READER_BATCH
    batch = batch or SEAL_BATCH
    clock = _Clock(budget_s)
    total = 0
    skip: set[int] = set()
    while True:
        try:
            done = _seal_batch(wait, batch, skip, clock, handover)
        except _OutOfTime:
            return total
        if done is None:
            return total
        sealed, read = done
        total += sealed
        # Each round seals a row or skips one, so this ends.
        if sealed == read < batch or clock.over():
            return total
        if 0 < sealed < read:  # cut to fit the budget: go on at the size that fit
            batch = sealed


def seal_and_checkpoint() -> int:
    """One sealer round: seal, then write a checkpoint if one is due."""
    from audit.checkpoints import checkpoint_if_due

    sealed = seal_pending()
    checkpoint_if_due()
    return sealed


def run_sealer(
    stop: threading.Event, interval: float, heartbeat: Path | None = None
) -> None:
    """Seal every ``interval`` seconds until ``stop`` is set: in a worker's thread,
    or as a process of its own (``audit_seal --every``). After each round, failed
    or not, ``heartbeat`` is touched: a liveness probe reads that the loop runs
    (a database that is down is no reason to restart it)."""
    from django.db import close_old_connections, connections

    while not stop.wait(interval):
        try:
            seal_and_checkpoint()
        except Exception:  # a bad round must not end the sealer; the next retries
            log.exception("audit sealer round failed")
        finally:
            close_old_connections()
            if heartbeat is not None:
                heartbeat.touch()
    connections.close_all()


class SealerThread:
    """The sealer in a daemon thread, every ``interval`` seconds, until stopped."""

    def __init__(self, interval: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=run_sealer,
            args=(self._stop, interval),
            name="audit-sealer",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def start_sealer_thread(interval: float) -> SealerThread:
    return SealerThread(interval)
