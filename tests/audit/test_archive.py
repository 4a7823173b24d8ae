"""Retention: old segments move to a file that verifies alone; the rest still does."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from audit.archive import archive_old_segments, verify_archive
from audit.checkpoints import checkpoint_if_due
from audit.models import AuditEvent
from audit.services import Damage, record_event, seal_pending, verify_chain

pytestmark = pytest.mark.django_db


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=summary,
        input={"query": summary, "n": [1, 2.5, None]},
        output={"picked": ["weather"]},
    )


def segments(*sizes: int) -> list[list[AuditEvent]]:
    """Sealed runs of events, each closed by a checkpoint."""
    runs = []
    for size in sizes:
        runs.append([record(f"event {n}") for n in range(size)])
        seal_pending()
        checkpoint_if_due(force=True)
    return runs


def in_days(days: int) -> datetime:
    return timezone.now() + timedelta(days=days)


def test_nothing_is_archived_before_its_retention(tmp_path):
    segments(3, 2)
    assert archive_old_segments(out_dir=tmp_path) is None
    assert AuditEvent.objects.count() == 5


def test_old_segments_move_to_a_file_that_verifies_on_its_own(settings, tmp_path):
    old, newer = segments(3, 2)
    record("the head stays")
    archived = archive_old_segments(now=in_days(401), out_dir=tmp_path)
    assert archived is not None
    assert (archived.rows, archived.from_seq, archived.through_seq) == (5, 1, 5)
    assert not AuditEvent.objects.filter(pk__in=[e.pk for e in old + newer]).exists()
    check = verify_archive(archived.path)
    assert check.ok, check.problem
    assert check.checked == 5
    remaining = verify_chain()
    assert remaining.ok, remaining.problem
    assert remaining.checked == 1


def test_archiving_twice_anchors_each_archive_on_the_one_before(tmp_path):
    segments(2)
    record("head")
    first = archive_old_segments(now=in_days(401), out_dir=tmp_path)
    segments(2)
    record("new head")
    second = archive_old_segments(now=in_days(401), out_dir=tmp_path)
    assert first and second
    assert second.from_seq == first.through_seq + 1
    assert verify_archive(first.path).ok and verify_archive(second.path).ok
    assert verify_chain().ok


def test_an_edited_archive_names_the_edited_record(tmp_path):
    [events] = segments(3)
    record("head")
    archived = archive_old_segments(now=in_days(401), out_dir=tmp_path)
    assert archived is not None
    lines = archived.path.read_text().splitlines()
    row = json.loads(lines[2])
    row["event"]["summary"] = "edited later"
    lines[2] = json.dumps(row)
    archived.path.write_text("\n".join(lines) + "\n")
    check = verify_archive(archived.path)
    assert (check.kind, check.first_bad_id) == (Damage.CONTENT_EDITED, events[1].pk)


@pytest.mark.parametrize(
    "damage",
    ["not json", "[" * 10_000 + "]" * 10_000, '{"seq": 2}', '{"a": 1, "a": 2}', "\xff"],
    ids=["not-json", "ten-thousand-deep", "missing-fields", "repeated-key", "bytes"],
)
def test_an_unreadable_archive_line_is_named_as_damage_not_a_crash(tmp_path, damage):
    segments(3)
    record("head")
    archived = archive_old_segments(now=in_days(401), out_dir=tmp_path)
    assert archived is not None
    lines = archived.path.read_bytes().splitlines()
    lines[2] = damage.encode("latin-1")
    archived.path.write_bytes(b"\n".join(lines) + b"\n")
    check = verify_archive(archived.path)
    assert not check.ok
    assert check.kind == Damage.CONTENT_EDITED
    assert check.problem == "line 3 of the archive is not an archived record"


def test_an_unreadable_archive_header_is_a_bad_checkpoint(tmp_path):
    segments(2)
    record("head")
    archived = archive_old_segments(now=in_days(401), out_dir=tmp_path)
    assert archived is not None
    lines = archived.path.read_text().splitlines()
    archived.path.write_text("\n".join(["[" * 100 + "]" * 100, *lines[1:]]) + "\n")
    check = verify_archive(archived.path)
    assert (check.ok, check.kind) == (False, Damage.BAD_CHECKPOINT)


def test_an_archive_missing_its_last_rows_is_named(tmp_path):
    segments(3)
    record("head")
    archived = archive_old_segments(now=in_days(401), out_dir=tmp_path)
    assert archived is not None
    lines = archived.path.read_text().splitlines()
    archived.path.write_text("\n".join(lines[:-1]) + "\n")
    check = verify_archive(archived.path)
    assert check.kind == Damage.TAIL_MISSING


def test_deleting_old_rows_without_archiving_is_named_as_a_missing_head():
    [events] = segments(3)
    record("head")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute("DELETE FROM audit_auditevent WHERE id = %s", [events[0].pk])
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.HEAD_MISSING, events[1].pk)


def test_a_sealed_row_cannot_be_deleted_outside_the_archive():
    segments(1)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.all()._raw_delete(connection.alias)


def test_the_archive_refuses_a_damaged_chain(settings, tmp_path):
    settings.QUIVER_AUDIT_RETENTION_DAYS = 0
    [events] = segments(3)
    record("head")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE audit_auditevent SET summary = 'x' WHERE id = %s", [events[1].pk]
        )
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")
    with pytest.raises(CommandError, match=f"damaged at id {events[1].pk}"):
        call_command("audit_archive", "--out-dir", str(tmp_path))
    assert AuditEvent.objects.count() == 4


def test_the_commands_archive_then_verify_the_archive(settings, tmp_path, capsys):
    segments(2)
    record("head")
    settings.QUIVER_AUDIT_RETENTION_DAYS = 0
    call_command("audit_archive", "--out-dir", str(tmp_path / "archive"))
    [path] = (tmp_path / "archive").glob("audit-*.jsonl")
    call_command("audit_verify", "--archive", str(path))
    assert "OK: 2 records" in capsys.readouterr().out
