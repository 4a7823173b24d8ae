"""Checkpoints kept in Postgres: the same signed lines, shared by every process that
reaches the database, append-only, and checked by verify like the file."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from audit.checkpoint_store import FileStore, PostgresStore, checkpoint_store
from audit.checkpoints import checkpoint_if_due, read_book
from audit.hashing import signature_ok
from audit.models import AuditEvent, AuditNote, CheckpointLine
from audit.services import (
    Damage,
    record_event,
    seal_and_checkpoint,
    seal_pending,
    verify_chain,
)
from audit.sinks import deliver, sink_status
from audit.verify import ChainCheck
from compliance import last_verify

pytestmark = pytest.mark.django_db


@pytest.fixture
def in_postgres(settings: Any) -> None:
    settings.QUIVER_AUDIT_CHECKPOINT_STORE = "postgres"


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=summary,
        input={"query": summary},
        output={},
    )


def lines() -> list[dict[str, Any]]:
    rows = CheckpointLine.objects.order_by("id").values_list("line", flat=True)
    return [json.loads(line) for line in rows]


def as_owner(table: str, sql: str, params: list[Any] | None = None) -> None:
    """What the tables' owner can always do: switch the triggers off and write."""
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        cursor.execute(sql, params or [])
        cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")


def test_the_file_stays_the_store_by_default(settings, audit_checkpoints_per_test):
    assert settings.QUIVER_AUDIT_CHECKPOINT_STORE == "file"
    record("one")
    seal_and_checkpoint()
    assert audit_checkpoints_per_test.exists()
    assert not CheckpointLine.objects.exists()
    assert verify_chain().checkpoints == "file"


def test_a_checkpoint_goes_to_the_table_and_not_to_the_file(
    in_postgres, audit_checkpoints_per_test
):
    events = [record(str(n)) for n in range(3)]
    seal_and_checkpoint()
    [line] = lines()
    assert line["head_id"] == events[-1].pk
    assert (line["head_seq"], line["prev_sig"]) == (3, "")
    assert signature_ok(line)
    assert not audit_checkpoints_per_test.exists()


def test_each_line_follows_the_one_before_it(in_postgres):
    for round_ in range(3):
        record(str(round_))
        seal_pending_and_force()
    first, second, third = lines()
    assert second["prev_sig"] == first["sig"]
    assert third["prev_sig"] == second["sig"]
    book = read_book()
    assert not book.problem
    assert sorted(book.checkpoints) == [1, 2, 3]


def seal_pending_and_force() -> None:
    seal_pending()
    checkpoint_if_due(force=True)


def test_verify_checks_the_chain_against_the_table(in_postgres):
    for n in range(4):
        record(str(n))
    seal_and_checkpoint()
    check = verify_chain()
    assert check.ok, check.problem
    assert (check.checkpoints, check.checkpoint_seq) == ("postgres", 4)


def test_a_deleted_tail_is_named_against_the_table(in_postgres):
    events = [record(str(n)) for n in range(4)]
    seal_and_checkpoint()
    as_owner("audit_auditevent", "DELETE FROM audit_auditevent WHERE id = %s", [
        events[-1].pk
    ])  # fmt: skip
    check = verify_chain(seal=False)
    assert not check.ok
    assert check.kind == Damage.TAIL_MISSING


def test_a_line_removed_from_the_middle_is_named(in_postgres):
    for round_ in range(3):
        record(str(round_))
        seal_pending_and_force()
    middle = CheckpointLine.objects.order_by("id")[1]
    as_owner(
        "audit_checkpoint_line",
        "DELETE FROM audit_checkpoint_line WHERE id = %s",
        [middle.pk],
    )
    check = verify_chain(seal=False)
    assert check.kind == Damage.BAD_CHECKPOINT
    assert "checkpoint table audit_checkpoint_line line 2" in check.problem
    assert "a line was removed or reordered" in check.problem


def test_a_forged_line_is_named(in_postgres):
    record("one")
    seal_and_checkpoint()
    line = lines()[0]
    forged = json.dumps({**line, "head_seq": 9}, sort_keys=True)
    as_owner(
        "audit_checkpoint_line", "UPDATE audit_checkpoint_line SET line = %s", [forged]
    )
    check = verify_chain(seal=False)
    assert check.kind == Damage.BAD_CHECKPOINT
    assert "signature does not match" in check.problem


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_checkpoint_line SET line = 'x'",
        "DELETE FROM audit_checkpoint_line",
    ],
)
def test_the_table_refuses_to_change_or_lose_a_line(in_postgres, statement):
    record("one")
    seal_and_checkpoint()
    with (
        pytest.raises(Exception, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
    assert len(lines()) == 1


def test_the_table_refuses_truncate(in_postgres):
    record("one")
    seal_and_checkpoint()
    with (
        pytest.raises(Exception, match="TRUNCATE refused"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("SET LOCAL quiver.audit_truncate = 'off'")
        cursor.execute("TRUNCATE audit_checkpoint_line")


def test_no_two_lines_follow_the_same_line(in_postgres):
    record("one")
    seal_and_checkpoint()
    [line] = lines()
    with pytest.raises(IntegrityError), transaction.atomic():
        PostgresStore().append({"sig": "other", "prev_sig": ""}, "{}")
    assert lines() == [line]


def test_a_line_is_never_edited_through_the_model(in_postgres):
    record("one")
    seal_and_checkpoint()
    row = CheckpointLine.objects.get()
    with pytest.raises(Exception, match="cannot be modified"):
        row.save()
    with pytest.raises(Exception, match="cannot be deleted"):
        row.delete()


def test_the_file_can_still_be_checked_by_name_while_the_table_is_the_store(
    settings, audit_checkpoints_per_test
):
    record("one")
    seal_and_checkpoint()  # into the file
    settings.QUIVER_AUDIT_CHECKPOINT_STORE = "postgres"
    assert verify_chain(checkpoints="file").checkpoint_seq == 1
    assert verify_chain(checkpoints="postgres").checkpoint_seq is None


def test_sink_deliveries_are_counted_in_the_database(in_postgres, settings):
    settings.QUIVER_AUDIT_CHECKPOINT_URL = "http://127.0.0.1:9/nothing-listens"
    settings.QUIVER_AUDIT_SINK_TIMEOUT_S = 1
    record("one")
    seal_and_checkpoint()
    deliver(lines()[0])  # a second failed delivery of the same line
    note = AuditNote.objects.get(name="sinks").data
    assert note["webhook"]["failures"] == 2
    status = sink_status(lines()[-1])
    assert status["webhook"]["behind"] is True
    assert status["webhook"]["failures"] == 2


def test_the_last_check_is_kept_in_the_database(in_postgres, as_compliance):
    assert last_verify.last_check() is None
    bad = ChainCheck(ok=False, checked=7, first_bad_id=3, problem="x", kind="link")
    last_verify.remember(bad, by="someone")
    assert AuditNote.objects.get(name="last_verify").data["outcome"] == "damaged"
    page = as_compliance.get("/audit/verify/").content.decode()
    assert "the chain was damaged (link)" in page


def test_the_command_checks_against_the_configured_store(in_postgres):
    record("one")
    seal_and_checkpoint()
    out = io.StringIO()
    call_command("audit_verify", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert (result["ok"], result["checkpoints"], result["checkpoint_seq"]) == (
        True,
        "postgres",
        1,
    )


def test_the_api_takes_postgres_as_a_checkpoint_source(in_postgres, as_compliance):
    record("one")
    seal_and_checkpoint()
    answer = as_compliance.get("/api/v1/audit/verify?checkpoints=postgres").json()
    assert (answer["ok"], answer["checkpoints"]) == (True, "postgres")
    default = as_compliance.get("/api/v1/audit/verify").json()
    assert default["checkpoints"] == "postgres"


def test_the_store_setting_picks_the_store(settings):
    assert isinstance(checkpoint_store(), FileStore)
    settings.QUIVER_AUDIT_CHECKPOINT_STORE = "postgres"
    assert isinstance(checkpoint_store(), PostgresStore)
