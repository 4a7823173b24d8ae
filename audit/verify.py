"""Checking the audit chain: every hash, every link, against the signed checkpoints.

It names the first bad record and the kind of damage (``Damage``). It streams the
chain by ``seq`` in big keyset pages over only the text columns that are hashed
(audit.hashing.CONTENT_SQL), so it never builds model objects or parses stored JSON.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from django.conf import settings
from django.db import connection, connections
from django.db.backends.utils import CursorWrapper
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from audit.checkpoint_store import STORES
from audit.checkpoints import Book, book_from_lines, last_record, read_book
from audit.hashing import (
    CONTENT_SQL,
    GENESIS,
    KEYED,
    LEGACY,
    keyed_hash,
    legacy_hash,
    unkeyed_hash,
)
from audit.keyring import keyring
from audit.sealing import chain_head, seal_pending
from audit.sinks import sink_status

# A check asked for in a web request stops here, well inside the web server's
# timeout (QUIVER_WEB_TIMEOUT_SECONDS, 60 s) and without holding a web thread
# longer: a longer chain is checked with ``since`` or by ``audit_verify``.
WEB_DEADLINE_S = 30.0
# How long verify without a deadline (the command) seals before it checks.
COMMAND_SEAL_S = 300.0


class VerifyTooSlow(Exception):
    """The check ran past its deadline and was stopped, unfinished."""

    def __init__(self, deadline_s: float = 0.0) -> None:
        super().__init__(
            f"verify: the chain was not checked within {deadline_s:g} s and the "
            "check was stopped; check from a later point (since=) or run the "
            "audit_verify command"
        )


class Damage:
    CONTENT_EDITED = "content_edited"
    LINK_BROKEN = "link_broken"
    HEAD_MISSING = "head_missing"
    TAIL_MISSING = "tail_missing"
    TRUNCATED = "truncated"
    CHECKPOINT_MISMATCH = "checkpoint_mismatch"
    BAD_CHECKPOINT = "bad_checkpoint"
    BAD_KEY = "bad_key"
    UNKNOWN_KEY = "unknown_key"
    UNSEALED = "unsealed_too_long"


@dataclass(frozen=True)
class ChainCheck:
    ok: bool
    checked: int
    first_bad_id: int | None
    problem: str
    kind: str = ""
    first_bad_seq: int | None = None
    head_seq: int = 0
    head_id: int | None = None
    checkpoint_seq: int | None = None
    checkpoint_time: str | None = None
    seconds: float = 0.0
    per_second: int = 0
    checkpoints: str = "file"
    # Each checkpoint sink: behind (missed the last line), failures, last error.
    sinks: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, finding: Finding | None, checked: int, seconds: float, **head: Any
    ) -> ChainCheck:
        """A walk's answer: its first finding (None: the chain holds), its pace."""
        return cls(
            ok=finding is None,
            checked=checked,
            first_bad_id=finding.row_id if finding else None,
            problem=finding.problem if finding else "",
            kind=finding.kind if finding else "",
            first_bad_seq=finding.seq if finding else None,
            seconds=round(seconds, 3),
            per_second=int(checked / seconds) if seconds > 0 else 0,
            **head,
        )


@dataclass
class Finding:
    kind: str
    problem: str
    row_id: int | None = None
    seq: int | None = None


def parse_since(text: str) -> int | datetime:
    """An audit id, or an ISO date or date-time (UTC when it names no zone)."""
    if text.isdigit():
        return int(text)
    moment = parse_datetime(text)
    if moment is None and (day := parse_date(text)) is not None:
        moment = datetime(day.year, day.month, day.day)
    if moment is None:
        raise ValueError("expected an audit id or an ISO date")
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return moment


class ChainWalk:
    """The running state of one pass over the chain, in seq order."""

    def __init__(self, book: Book, seq: int, prev: str) -> None:
        self.book = book
        self.keys = keyring().keys
        self.expected_seq = seq
        self.prev = prev
        self.checked = 0
        self.keyed_seen = False
        self.deadline: float | None = None

    def step(self, row: tuple[Any, ...]) -> Finding | None:
        seq, row_id, version, row_key, prev_hash, digest, *content = row
        if seq != self.expected_seq:
            missing = seq - self.expected_seq
            return Finding(
                Damage.LINK_BROKEN,
                f"{missing} record(s) missing before this one "
                f"(seq {self.expected_seq} to {seq - 1})",
            )
        if prev_hash != self.prev:
            return Finding(
                Damage.LINK_BROKEN,
                "previous hash does not match the record before it",
            )
        finding = self._hash(seq, row_id, version, row_key, prev_hash, digest, content)
        if finding is not None:
            return finding
        checkpoint = self.book.checkpoints.get(seq)
        if checkpoint and (
            checkpoint["head_hash"] != digest or checkpoint["head_id"] != row_id
        ):
            return Finding(
                Damage.CHECKPOINT_MISMATCH,
                f"the checkpoint of {checkpoint['time']} saw id "
                f"{checkpoint['head_id']} with another hash at this place: the chain "
                "was rebuilt or re-hashed from here",
            )
        self.prev = digest
        self.expected_seq += 1
        self.checked += 1
        return None

    def _hash(
        self,
        seq: int,
        row_id: int,
        version: int,
        row_key: str,
        prev_hash: str,
        digest: str,
        content: list[str],
    ) -> Finding | None:
        if version == KEYED:
            self.keyed_seen = True
            key = self.keys.get(row_key)
            if key is None:
                return Finding(
                    Damage.UNKNOWN_KEY,
                    f"sealed with key {row_key or '(none)'}, which is not in the "
                    "audit keyring (QUIVER_AUDIT_KEY_FILE, QUIVER_AUDIT_OLD_KEYS_FILE)",
                )
            retired = self.book.retired.get(row_key)
            if retired is not None and seq >= retired:
                return Finding(
                    Damage.BAD_KEY,
                    f"sealed with key {row_key}, retired by the rotation at seq "
                    f"{retired}",
                )
            if keyed_hash(key, seq, row_id, prev_hash, content) == digest:
                return None
            if unkeyed_hash(seq, row_id, prev_hash, content) == digest:
                return Finding(Damage.BAD_KEY, "re-hashed without the audit key")
            return Finding(
                Damage.CONTENT_EDITED,
                "content does not match hash (edited, or re-hashed with another key)",
            )
        if version != LEGACY or self.keyed_seen:
            return Finding(
                Damage.BAD_KEY,
                f"an unkeyed hash (version {version}) after keyed records",
            )
        if legacy_hash(prev_hash, content) == digest:
            return None
        return Finding(Damage.CONTENT_EDITED, "content does not match hash")


_ROW_SQL = (
    "SELECT seq, id, hash_version, key_id, prev_hash, hash, "
    f"{CONTENT_SQL} FROM audit_auditevent "
    "WHERE seq >= %s AND seq < %s ORDER BY seq LIMIT %s"
)
_NO_END = 2**62


def chain_anchor(book: Book) -> tuple[int, str]:
    """Where the chain in the table must begin: after the last archived segment."""
    if not book.archives:
        return 0, GENESIS
    last = book.archives[-1]
    return int(last["through_seq"]), str(last["through_hash"])


def _first_seq(cursor: CursorWrapper, since: int | datetime | None) -> int | None:
    if since is None:
        cursor.execute("SELECT min(seq) FROM audit_auditevent")
    elif isinstance(since, int):
        cursor.execute("SELECT min(seq) FROM audit_auditevent WHERE id >= %s", [since])
    else:
        cursor.execute(
            "SELECT min(seq) FROM audit_auditevent WHERE created >= %s", [since]
        )
    row = cursor.fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _start(
    cursor: CursorWrapper, book: Book, since: int | datetime | None
) -> tuple[int, str, Finding | None]:
    """The first seq to check, the hash it must link to, or a missing head."""
    anchor_seq, anchor_hash = chain_anchor(book)
    first = _first_seq(cursor, since)
    if first is None and since is not None:
        return _NO_END - 1, "", None  # nothing at or after since: nothing to walk
    if first is None:
        return anchor_seq + 1, anchor_hash, None
    if first <= anchor_seq + 1:
        # Rows at or before the anchor are archived (a delete that did not commit
        # leaves them here too); the chain in the table goes on after them.
        return anchor_seq + 1, anchor_hash, None
    if since is not None:
        cursor.execute("SELECT hash FROM audit_auditevent WHERE seq = %s", [first - 1])
        row = cursor.fetchone()
        if row is not None:
            return first, str(row[0]), None
    cursor.execute("SELECT id FROM audit_auditevent WHERE seq = %s", [first])
    missing = Finding(
        Damage.HEAD_MISSING,
        f"the chain starts at seq {first} but the checkpoints say it starts at seq "
        f"{anchor_seq + 1}: {abs(first - anchor_seq - 1)} records missing before it",
        int(cursor.fetchone()[0]),
        first,
    )
    return first, anchor_hash, missing


def _walk(
    cursor: CursorWrapper, walk: ChainWalk, batch: int, end: int = _NO_END
) -> Finding | None:
    while True:
        if walk.deadline is not None and time.monotonic() > walk.deadline:
            raise VerifyTooSlow
        cursor.execute(_ROW_SQL, [walk.expected_seq, end, batch])
        rows = cursor.fetchall()
        step = walk.step
        for row in rows:
            finding = step(row)
            if finding is not None:
                finding.row_id, finding.seq = int(row[1]), int(row[0])
                return finding
        if len(rows) < batch:
            return None


Task = tuple[int, int, str, bool, int]


def _ranges(
    cursor: CursorWrapper, book: Book, seq: int, prev: str, batch: int, workers: int
) -> list[Task]:
    """Consecutive seq ranges, each with the stored hash it links to (the range
    before checks that hash); none when one worker will do."""
    head = chain_head(cursor)[0]
    if workers < 2 or connection.in_atomic_block or head - seq < 2 * batch:
        return []
    bounds = [seq + (head + 1 - seq) * k // workers for k in range(workers + 1)]
    tasks: list[Task] = [(bounds[0], bounds[1], prev, False, batch)]
    for start, end in zip(bounds[1:-1], bounds[2:], strict=True):
        cursor.execute(
            "SELECT hash, hash_version FROM audit_auditevent WHERE seq = %s",
            [start - 1],
        )
        row = cursor.fetchone()
        if row is None:  # a gap: one worker finds and names it
            return []
        tasks.append((start, end, str(row[0]), row[1] == KEYED, batch))
    return tasks


def _walk_range(
    book: Book, task: Task, deadline: float | None
) -> tuple[Finding | None, int]:
    start, end, prev, keyed_seen, batch = task
    walk = ChainWalk(book, start, prev)
    walk.keyed_seen = keyed_seen
    walk.deadline = deadline
    try:
        with connection.cursor() as cursor:
            finding = _walk(cursor, walk, batch, end)
    finally:
        connections.close_all()  # this thread's own connection
    if finding is None and walk.expected_seq != end:
        finding = Finding(
            Damage.LINK_BROKEN,
            f"records missing from seq {walk.expected_seq} to {end - 1}",
            seq=walk.expected_seq,
        )
    return finding, walk.checked


def run_ranges(
    book: Book, tasks: list[Task], deadline: float | None = None
) -> tuple[Finding | None, int]:
    """Check the ranges in threads, each on its own connection: while one hashes,
    another's Postgres backend reads and converts rows. The first finding in seq
    order wins. (Threads, not forked processes: a fork copies the parent's open
    broker and database sockets, and libraries' after-fork hooks then block on
    them.)"""
    with ThreadPoolExecutor(len(tasks), thread_name_prefix="audit-verify") as pool:
        results = list(pool.map(lambda task: _walk_range(book, task, deadline), tasks))
    checked = 0
    for finding, count in results:
        checked += count
        if finding is not None:
            return finding, checked
    return None, checked


def _tail(cursor: CursorWrapper, book: Book) -> Finding | None:
    """The chain's head against the last checkpoint: a lost tail or a TRUNCATE."""
    last = book.last
    cursor.execute(
        "SELECT seq, id FROM audit_auditevent WHERE seq IS NOT NULL "
        "ORDER BY seq DESC LIMIT 1"
    )
    head = cursor.fetchone()
    if last is None or (head is not None and int(head[0]) >= int(last["head_seq"])):
        return None
    saw = f"the checkpoint of {last['time']} saw id {last['head_id']}"
    if head is None:
        return Finding(
            Damage.TRUNCATED,
            f"the audit table is empty (TRUNCATE, or every row deleted) but {saw} "
            f"and {last['count']} records",
            int(last["head_id"]),
            int(last["head_seq"]),
        )
    missing = int(last["head_seq"]) - int(head[0])
    return Finding(
        Damage.TAIL_MISSING,
        f"the chain ends at id {head[1]} but {saw}: {missing} records missing at "
        "the tail",
        int(head[1]),
        int(head[0]),
    )


def _unsealed(cursor: CursorWrapper) -> Finding | None:
    limit = timezone.now() - timedelta(seconds=settings.QUIVER_AUDIT_SEAL_MAX_DELAY_S)
    cursor.execute(
        "SELECT min(id), count(*) FROM audit_auditevent "
        "WHERE hash IS NULL AND created < %s",
        [limit],
    )
    first, count = cursor.fetchone()
    if not count:
        return None
    return Finding(
        Damage.UNSEALED,
        f"{count} record(s) unsealed for longer than "
        f"{settings.QUIVER_AUDIT_SEAL_MAX_DELAY_S}s (is the sealer running?)",
        int(first),
    )


def _find(
    book: Book,
    since: int | datetime | None,
    batch: int,
    workers: int,
    deadline: float | None,
) -> tuple[Finding | None, int]:
    if book.problem:
        return Finding(Damage.BAD_CHECKPOINT, book.problem), 0
    with connection.cursor() as cursor:
        seq, prev, missing = _start(cursor, book, since)
        if missing is not None:
            return missing, 0
        tasks = _ranges(cursor, book, seq, prev, batch, workers)
    if tasks:
        finding, checked = run_ranges(book, tasks, deadline)
    else:
        walk = ChainWalk(book, seq, prev)
        walk.deadline = deadline
        with connection.cursor() as cursor:
            finding, checked = _walk(cursor, walk, batch), walk.checked
    with connection.cursor() as cursor:
        finding = finding or _tail(cursor, book) or _unsealed(cursor)
    if finding is None and book.unknown_key:
        finding = Finding(Damage.UNKNOWN_KEY, book.unknown_key)
    return finding, checked


def verify_chain(
    *,
    since: int | datetime | None = None,
    seal: bool = True,
    batch: int = 20_000,
    workers: int = 1,
    checkpoints: str | None = None,
    deadline_s: float | None = None,
) -> ChainCheck:
    """Seal what is pending (unless told not to), then check the whole chain, split
    over ``workers`` threads with their own connections when asked (outside a
    transaction only: another connection cannot see its uncommitted rows), against
    the configured checkpoint store, or the one ``checkpoints`` names (``file``,
    ``postgres``, or ``s3``: the bucket's copy).

    It never waits for the chain lock: while a sealer holds it (a backlog being
    sealed) it checks the chain as sealed so far, and the sealer seals the rest.
    ``VerifyTooSlow`` when the walk runs past ``deadline_s``."""
    started = time.monotonic()
    if seal:
        # A web request seals for a reader's budget; a command the whole backlog.
        seal_pending(wait=False, budget_s=None if deadline_s else COMMAND_SEAL_S)
    book = read_checkpoints(checkpoints)
    deadline = None if deadline_s is None else started + deadline_s
    try:
        finding, checked = _find(book, since, batch, workers, deadline)
    except VerifyTooSlow:
        raise VerifyTooSlow(deadline_s or 0.0) from None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq, id FROM audit_auditevent WHERE seq IS NOT NULL "
            "ORDER BY seq DESC LIMIT 1"
        )
        head = cursor.fetchone() or (0, None)
    seconds = time.monotonic() - started
    last = book.last or {}
    return ChainCheck.of(
        finding,
        checked,
        seconds,
        head_seq=int(head[0]),
        head_id=head[1],
        checkpoint_seq=last.get("head_seq"),
        checkpoint_time=last.get("time"),
        checkpoints=checkpoints or settings.QUIVER_AUDIT_CHECKPOINT_STORE,
        sinks=sink_status(last_record()),
    )


CHECKPOINT_SOURCES = ("file", "postgres", "s3")


def read_checkpoints(source: str | None = None) -> Book:
    """The checked book from the configured checkpoint store (``None``), the file,
    the Postgres table, or the S3 sink's bucket."""
    if source is None or source in STORES:
        return read_book(store=source)
    if source != "s3":
        raise ValueError(f"must be one of {', '.join(CHECKPOINT_SOURCES)}")
    if not settings.QUIVER_AUDIT_CHECKPOINT_S3:
        return Book(problem="QUIVER_AUDIT_CHECKPOINT_S3 is not set")
    from audit.sinks.s3 import S3Error, bucket_from_settings

    bucket = bucket_from_settings()
    try:
        lines = bucket.read_lines()
    except (S3Error, httpx.HTTPError) as exc:
        return Book(problem=f"the checkpoint bucket cannot be read: {exc}")
    return book_from_lines(lines, f"bucket {settings.QUIVER_AUDIT_CHECKPOINT_S3}")
