"""Retention: whole old segments of the chain move to a JSONL file that verifies alone.

A segment runs from the chain's first row in the table to a signed checkpoint whose
rows are all older than ``QUIVER_AUDIT_RETENTION_DAYS``. The file holds a signed
header (the segment's anchor: the hash it links to, and the checkpoint at its end),
then every row with the exact text its hash covers. The rows are deleted in the same
transaction with ``quiver.audit_archive`` set, the one way the trigger lets a sealed
row go; an ``archive`` line in the checkpoint file then anchors the rest of the
chain, whose first row's ``prev_hash`` is the segment's last hash.

The table's owner can still delete rows (or drop the trigger): the checkpoint file,
outside the database, is what names that as a missing head or tail.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from audit.checkpoints import Book, append_record, read_book
from audit.hashing import (
    CONTENT_FIELDS,
    CONTENT_SQL,
    GENESIS,
    key_id,
    sign,
    signature_ok,
)
from audit.sealing import seal_pending, take_chain_lock
from audit.sinks import deliver
from audit.verify import ChainCheck, ChainWalk, Damage, Finding, chain_anchor
from config import jsonparse

_SEGMENT_SQL = (
    "SELECT seq, id, hash_version, key_id, prev_hash, hash, "
    f"{CONTENT_SQL} FROM audit_auditevent "
    "WHERE seq > %s AND seq <= %s ORDER BY seq"
)


class ArchiveError(RuntimeError):
    """The chain cannot be archived as it stands (damaged, or nothing is due)."""


@dataclass(frozen=True)
class Archived:
    path: Path
    rows: int
    from_seq: int
    through_seq: int


def _segment_end(cursor: CursorWrapper, book: Book, cutoff: datetime) -> dict | None:
    """The last checkpoint before the first row younger than the cut-off, never the
    chain's head (the sealer goes on from the head)."""
    anchor_seq, _ = chain_anchor(book)
    cursor.execute(
        "SELECT coalesce(min(seq) FILTER (WHERE created >= %s), max(seq) + 1), "
        "max(seq) FROM audit_auditevent WHERE seq > %s",
        [cutoff, anchor_seq],
    )
    first_young, head = cursor.fetchone()
    if head is None:
        return None
    ends = [
        seq for seq in book.checkpoints if anchor_seq < seq < min(first_young, head)
    ]
    return book.checkpoints[max(ends)] if ends else None


def _rows(cursor: CursorWrapper, book: Book, end: dict[str, Any]) -> list[tuple]:
    """The segment's rows, refused unless they verify (only good rows leave)."""
    anchor_seq, anchor_hash = chain_anchor(book)
    cursor.execute(_SEGMENT_SQL, [anchor_seq, end["head_seq"]])
    rows = cursor.fetchall()
    walk = ChainWalk(
        Book(checkpoints={int(end["head_seq"]): end}), anchor_seq + 1, anchor_hash
    )
    for row in rows:
        finding = walk.step(row)
        if finding is not None:
            raise ArchiveError(
                f"the chain is damaged at id {row[1]} ({finding.kind}: "
                f"{finding.problem}); run audit_verify"
            )
    if walk.expected_seq != int(end["head_seq"]) + 1:
        raise ArchiveError(
            "the segment does not reach its checkpoint; run audit_verify"
        )
    return rows


def _row_record(row: tuple) -> dict[str, Any]:
    seq, row_id, version, row_key, prev_hash, digest, *content = row
    return {
        "seq": seq,
        "id": row_id,
        "hash_version": version,
        "key_id": row_key,
        "prev_hash": prev_hash,
        "hash": digest,
        # The exact text each hash covers (input and output are jsonb's own text).
        "event": dict(zip(CONTENT_FIELDS, content, strict=True)),
    }


def _write(path: Path, book: Book, end: dict[str, Any], rows: list[tuple]) -> str:
    anchor_seq, anchor_hash = chain_anchor(book)
    header: dict[str, Any] = {
        "kind": "archive-header",
        "from_seq": anchor_seq + 1,
        "through_seq": end["head_seq"],
        "rows": len(rows),
        "anchor_seq": anchor_seq,
        "anchor_hash": anchor_hash,
        "anchor_record": book.archives[-1] if book.archives else None,
        "end_checkpoint": end,
        "key_id": key_id(),
    }
    header["sig"] = sign(header)
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with path.open("x", encoding="utf-8") as handle:
        for record in (header, *(_row_record(row) for row in rows)):
            line = json.dumps(record, sort_keys=True) + "\n"
            handle.write(line)
            digest.update(line.encode())
        handle.flush()
        os.fsync(handle.fileno())
    return digest.hexdigest()


def archive_old_segments(
    *, now: datetime | None = None, out_dir: Path | None = None
) -> Archived | None:
    """Move the chain's oldest whole segments past retention to a file; None when
    no segment is old enough."""
    seal_pending()
    cutoff = (now or timezone.now()) - timedelta(
        days=settings.QUIVER_AUDIT_RETENTION_DAYS
    )
    with transaction.atomic(), connection.cursor() as cursor:
        take_chain_lock(cursor, wait=True)
        book = read_book()
        if book.problem:
            raise ArchiveError(book.problem)
        end = _segment_end(cursor, book, cutoff)
        if end is None:
            return None
        rows = _rows(cursor, book, end)
        anchor_seq, _ = chain_anchor(book)
        folder = out_dir or Path(settings.QUIVER_STATE_DIR) / "audit-archive"
        path = folder / f"audit-{anchor_seq + 1:012d}-{end['head_seq']:012d}.jsonl"
        file_hash = _write(path, book, end, rows)
        _delete_segment(cursor, anchor_seq, int(end["head_seq"]))
        line = append_record(
            {
                "kind": "archive",
                "from_seq": anchor_seq + 1,
                "through_seq": end["head_seq"],
                "through_id": end["head_id"],
                "through_hash": end["head_hash"],
                "rows": len(rows),
                "file": path.name,
                "file_sha256": file_hash,
                "time": timezone.now().isoformat(),
            }
        )
    deliver(line)
    return Archived(path, len(rows), anchor_seq + 1, int(end["head_seq"]))


def _delete_segment(cursor: CursorWrapper, after_seq: int, through_seq: int) -> None:
    """The one DELETE the trigger allows: sealed rows, with quiver.audit_archive on
    for this statement only."""
    cursor.execute("SET LOCAL quiver.audit_archive = 'on'")
    cursor.execute(
        "DELETE FROM audit_auditevent WHERE seq > %s AND seq <= %s",
        [after_seq, through_seq],
    )
    cursor.execute("SET LOCAL quiver.audit_archive = 'off'")


def _header_problem(header: dict[str, Any]) -> str:
    if header.get("kind") != "archive-header" or not signature_ok(header):
        return "the archive's header is not signed with the audit key"
    end = header["end_checkpoint"]
    if not signature_ok(end) or end["head_seq"] != header["through_seq"]:
        return "the archive's end checkpoint is not signed with the audit key"
    anchor = header["anchor_record"]
    if anchor is None:
        ok = header["anchor_seq"] == 0 and header["anchor_hash"] == GENESIS
    else:
        ok = signature_ok(anchor) and (
            anchor["through_seq"],
            anchor["through_hash"],
        ) == (header["anchor_seq"], header["anchor_hash"])
    return "" if ok else "the archive's anchor is not a signed archive record"


_ROW_KEYS = {"seq", "id", "hash_version", "key_id", "prev_hash", "hash", "event"}


def _is_record(record: Any) -> bool:
    """Whether a line read has every field ``_row`` takes."""
    if not isinstance(record, dict) or not set(record) >= _ROW_KEYS:
        return False
    event = record["event"]
    return isinstance(event, dict) and set(CONTENT_FIELDS) <= set(event)


def _row(record: dict[str, Any]) -> tuple:
    event = record["event"]
    return (
        record["seq"],
        record["id"],
        record["hash_version"],
        record["key_id"],
        record["prev_hash"],
        record["hash"],
        *(event[name] for name in CONTENT_FIELDS),
    )


def _read_line(line: str) -> Any:
    """One line of an archive, as JSON (None when it is not: a damaged file)."""
    try:
        return jsonparse.loads(line)
    except ValueError:
        return None


def _check_archive(path: Path) -> tuple[Finding | None, int, dict[str, Any]]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        header = _read_line(handle.readline() or "{}")
        if not isinstance(header, dict):
            problem = "the archive's header is not JSON"
            return Finding(Damage.BAD_CHECKPOINT, problem), 0, {}
        problem = _header_problem(header)
        if problem:
            return Finding(Damage.BAD_CHECKPOINT, problem), 0, header
        end = header["end_checkpoint"]
        walk = ChainWalk(
            Book(checkpoints={int(end["head_seq"]): end}),
            int(header["anchor_seq"]) + 1,
            str(header["anchor_hash"]),
        )
        for number, line in enumerate(handle, start=2):
            record = _read_line(line)
            if not _is_record(record):
                problem = f"line {number} of the archive is not an archived record"
                return Finding(Damage.CONTENT_EDITED, problem), walk.checked, header
            row = _row(record)
            finding = walk.step(row)
            if finding is not None:
                finding.row_id, finding.seq = int(row[1]), int(row[0])
                return finding, walk.checked, header
    if walk.expected_seq != int(end["head_seq"]) + 1:
        last = walk.expected_seq - 1
        return (
            Finding(
                Damage.TAIL_MISSING,
                f"the archive ends at seq {last} but its checkpoint of {end['time']} "
                f"saw id {end['head_id']}: {int(end['head_seq']) - last} records "
                "missing at the tail",
            ),
            walk.checked,
            header,
        )
    return None, walk.checked, header


def verify_archive(path: Path) -> ChainCheck:
    """Check an archive file on its own: header, anchor, every row, its end."""
    started = time.monotonic()
    finding, checked, header = _check_archive(path)
    seconds = time.monotonic() - started
    end = header.get("end_checkpoint") or {}
    return ChainCheck.of(
        finding,
        checked,
        seconds,
        head_seq=int(end.get("head_seq", 0)),
        head_id=end.get("head_id"),
        checkpoint_seq=end.get("head_seq"),
        checkpoint_time=end.get("time"),
    )
