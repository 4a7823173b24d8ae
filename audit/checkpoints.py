"""Signed checkpoints of the chain, kept outside the database.

A checkpoint (head seq, id and hash, count, time, key id, the previous line's
signature) is signed with the audit key, appended to the checkpoint store and handed
to the sinks. Verify compares the chain to every checkpoint, so a deleted tail, a
TRUNCATE or a rebuilt chain is named even by someone who owns the database, and a
line removed from the store is named too. docs/explanation/audit-chain.md, Signed
checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from audit.checkpoint_store import FileStore, checkpoint_store, store_named
from audit.hashing import key_id, old_signature_ok, sign, signature_ok
from audit.keyring import keyring
from audit.sealing import chain_head, may_extend, take_chain_lock
from audit.sinks import deliver, line_of
from config import jsonparse

Record = dict[str, Any]


def checkpoint_file() -> Path:
    return Path(settings.QUIVER_AUDIT_CHECKPOINT_FILE)


def last_record() -> Record | None:
    line = checkpoint_store().last_line()
    return jsonparse.loads(line) if line.strip() else None


class SignedByAnotherKey(RuntimeError):
    """The store's last line was signed with another key than this process's."""


def append_record(record: Record, *, old_key: bytes | None = None) -> Record:
    """Sign ``record`` chained to the store's last line and append it (the caller
    holds the chain lock). A rotation also passes the retired ``old_key``, which
    signs the line too (``old_sig``). The caller hands the line to the sinks
    (``deliver``) once it has let go of the lock. The last line must be signed
    with this process's key (or, in a rotation, the retired one): lines change
    keys only through a rotation line."""
    previous = last_record()
    expected = key_id() if old_key is None else key_id(old_key)
    signed_by = str((previous or {}).get("key_id", ""))
    if signed_by not in ("", expected):
        raise SignedByAnotherKey(
            f"the last checkpoint line is signed with key {signed_by}, not {expected}"
        )
    record = {**record, "key_id": key_id(), "prev_sig": (previous or {}).get("sig", "")}
    if old_key is not None:
        record["old_sig"] = sign(record, old_key)
    record["sig"] = sign(record)
    checkpoint_store().append(record, line_of(record))
    return record


def _due(last: Record | None, head_seq: int, now: datetime) -> bool:
    if last is None:
        return True
    since = int(last.get("head_seq", 0))
    if head_seq <= since:
        return False
    if head_seq - since >= settings.QUIVER_AUDIT_CHECKPOINT_EVERY:
        return True
    age = now - datetime.fromisoformat(str(last["time"]))
    return age.total_seconds() >= settings.QUIVER_AUDIT_CHECKPOINT_S


def checkpoint_if_due(*, force: bool = False) -> Record | None:
    """Write a checkpoint of the committed head when the cadence says so."""
    with transaction.atomic(), connection.cursor() as cursor:
        take_chain_lock(cursor, wait=True)
        head_seq, head_id, head_hash = chain_head(cursor)
        now = datetime.now(UTC)
        last = last_record()
        if head_seq == 0 or not (force or _due(last, head_seq, now)):
            return None
        if not may_extend(str((last or {}).get("key_id", ""))):
            return None  # a process with the key that signed the last line signs
        record = append_record(
            {
                "kind": "checkpoint",
                "head_seq": head_seq,
                "head_id": head_id,
                "head_hash": head_hash,
                "count": head_seq,
                "time": now.isoformat(),
            }
        )
    deliver(record)  # after the lock: a slow sink never holds up a sealer
    return record


@dataclass
class Book:
    """Every line of the checkpoint file, checked: signatures and their chain."""

    checkpoints: dict[int, Record] = field(default_factory=dict)
    archives: list[Record] = field(default_factory=list)
    last: Record | None = None
    problem: str = ""
    # key_id -> the first seq sealed after a rotation retired it (rows at or after
    # it must not carry that key).
    retired: dict[str, int] = field(default_factory=dict)
    # The first line signed with a key the keyring lacks (it could not be checked).
    unknown_key: str = ""


def read_book(path: Path | None = None, store: str | None = None) -> Book:
    """The checked book of the file at ``path``, else of the store called
    ``store``, else of the configured one."""
    found = (
        FileStore(path)
        if path is not None
        else (store_named(store) if store else checkpoint_store())
    )
    return book_from_lines(found.lines(), found.source)


def book_from_lines(lines: Iterable[str], source: str) -> Book:
    """The checked book of checkpoint lines in their order (a file, or the objects
    of a bucket put in order by their ``prev_sig`` links). A line signed with a key
    the keyring lacks cannot be checked: the book notes it (``unknown_key``) and
    verify reports it, after naming the first row sealed with that key."""
    book = Book()
    previous: Record = {}
    known = keyring().keys
    for number, line in enumerate(lines, start=1):
        record, problem = _parse(line)
        missing = [
            key
            for key in (record.get("key_id"), record.get("old_key_id"))
            if key is not None and str(key) not in known
        ]
        if missing and not book.unknown_key:
            book.unknown_key = (
                f"{source} line {number}: signed with key {missing[0]}, which is not "
                "in the audit keyring"
            )
        problem = problem or _check_line(record, previous, checkable=not missing)
        if problem:
            book.problem = f"{source} line {number}: {problem}"
            return book
        previous = record
        _file(book, record)
    return book


def _file(book: Book, record: Record) -> None:
    if record["kind"] == "archive":
        book.archives.append(record)
        return
    if record["kind"] == "rotation":
        book.retired[str(record["old_key_id"])] = int(record["first_seq"])
    book.checkpoints[int(record["head_seq"])] = record
    book.last = record


def _parse(line: str) -> tuple[Record, str]:
    try:
        record = jsonparse.loads(line)
    except ValueError:
        return {}, "not valid JSON"
    if not isinstance(record, dict) or "sig" not in record or "kind" not in record:
        return {}, "not a checkpoint record"
    return record, ""


def _check_line(record: Record, previous: Record, *, checkable: bool) -> str:
    if checkable and not signature_ok(record):
        return (
            f"signature does not match the audit key {record.get('key_id', '')} "
            "(forged, or another key with that name)"
        )
    if record.get("prev_sig", "") != previous.get("sig", ""):
        return "does not follow the line before it (a line was removed or reordered)"
    return _key_problem(record, str(previous.get("key_id", "")), checkable)


def _key_problem(record: Record, before: str, checkable: bool) -> str:
    """Lines keep their key until a rotation line, signed by both keys, hands over."""
    if record.get("kind") == "rotation":
        if record.get("key_id") != record.get("new_key_id"):
            return "a rotation line not signed by the key it hands over to"
        if before and record.get("old_key_id") != before:
            return f"a rotation from key {record.get('old_key_id')}, not {before}"
        if checkable and not old_signature_ok(record):
            return "a rotation line not signed by the key it retires"
        return ""
    if before and record.get("key_id") != before:
        return (
            f"signed with key {record.get('key_id')} after lines signed with {before}"
            ", with no rotation line between (use audit_rotate_key)"
        )
    return ""
