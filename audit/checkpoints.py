"""Signed checkpoints of the chain, kept outside the database.

A checkpoint is ``{kind, head_seq, head_id, head_hash, count, time, key_id,
prev_sig, sig}``, signed with the audit key, one JSON line appended to
``QUIVER_AUDIT_CHECKPOINT_FILE`` (and POSTed to ``QUIVER_AUDIT_CHECKPOINT_URL`` when
set). It is written every ``QUIVER_AUDIT_CHECKPOINT_EVERY`` sealed events, and at least
every ``QUIVER_AUDIT_CHECKPOINT_S`` seconds while events arrive. Verify compares the
chain to every checkpoint, so a deleted tail, a TRUNCATE or a chain rebuilt from
scratch is named even by someone who owns the database. Each line carries the previous
line's signature, so a line removed from the file is named too. ``audit_archive``
appends ``kind: archive`` lines the same way.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.db import connection, transaction

from audit.hashing import key_id, sign, signature_ok
from audit.sealing import chain_head, take_chain_lock

log = logging.getLogger(__name__)
Record = dict[str, Any]


def checkpoint_file() -> Path:
    return Path(settings.QUIVER_AUDIT_CHECKPOINT_FILE)


def _last_line(path: Path) -> str:
    """The file's last line, read from its end (the file only grows)."""
    if not path.exists():
        return ""
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - 65536))
        lines = handle.read().splitlines()
    return lines[-1].decode() if lines else ""


def last_record() -> Record | None:
    line = _last_line(checkpoint_file())
    return json.loads(line) if line.strip() else None


def append_record(record: Record) -> Record:
    """Sign ``record`` chained to the file's last line, append it, send it on."""
    previous = last_record()
    record = {**record, "key_id": key_id(), "prev_sig": (previous or {}).get("sig", "")}
    record["sig"] = sign(record)
    path = checkpoint_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    _send(record)
    return record


def _send(record: Record) -> None:
    url = settings.QUIVER_AUDIT_CHECKPOINT_URL
    if not url:
        return
    try:
        httpx.post(url, json=record, timeout=5).raise_for_status()
    except httpx.HTTPError:  # the file holds it; the sink is a second copy
        log.warning("audit checkpoint not delivered to %s", url, exc_info=True)


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
        if head_seq == 0 or not (force or _due(last_record(), head_seq, now)):
            return None
        return append_record(
            {
                "kind": "checkpoint",
                "head_seq": head_seq,
                "head_id": head_id,
                "head_hash": head_hash,
                "count": head_seq,
                "time": now.isoformat(),
            }
        )


@dataclass
class Book:
    """Every line of the checkpoint file, checked: signatures and their chain."""

    checkpoints: dict[int, Record] = field(default_factory=dict)
    archives: list[Record] = field(default_factory=list)
    last: Record | None = None
    problem: str = ""


def read_book(path: Path | None = None) -> Book:
    book = Book()
    path = path or checkpoint_file()
    if not path.exists():
        return book
    previous_sig = ""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            problem = _check_line(line, previous_sig)
            if problem:
                book.problem = f"checkpoint file {path.name} line {number}: {problem}"
                return book
            record = json.loads(line)
            previous_sig = record["sig"]
            if record["kind"] == "archive":
                book.archives.append(record)
            else:
                book.checkpoints[int(record["head_seq"])] = record
                book.last = record
    return book


def _check_line(line: str, previous_sig: str) -> str:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return "not valid JSON"
    if not isinstance(record, dict) or not signature_ok(record):
        return "signature does not match the audit key (forged, or another key)"
    if record.get("prev_sig", "") != previous_sig:
        return "does not follow the line before it (a line was removed or reordered)"
    return ""
