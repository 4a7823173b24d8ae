"""Tampering by the database's owner is named by verify: what, where, which kind."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from audit.checkpoints import checkpoint_if_due
from audit.hashing import CONTENT_SQL, keyed_hash, unkeyed_hash
from audit.models import AuditEvent
from audit.services import Damage, record_event, seal_pending, verify_chain

pytestmark = pytest.mark.django_db


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        catalog_version=1,
        summary=summary,
        input={"query": summary},
        output={"tools": [{"name": "weather", "score": 0.5}]},
    )


def sealed_chain(count: int) -> list[AuditEvent]:
    events = [record(f"event {n}") for n in range(count)]
    seal_pending()
    return [AuditEvent.objects.get(pk=event.pk) for event in events]


def as_owner(sql: str, params: list[Any] | None = None) -> None:
    """What the table's owner can always do: switch the triggers off and write."""
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute(sql, params or [])
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")


def rehash_from(seq: int, hasher: str, key: bytes = b"") -> None:
    """Recompute every hash from ``seq`` on, as a forger would: plain SHA-256 or an
    HMAC with a key of their own."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT seq, id, {CONTENT_SQL} FROM audit_auditevent WHERE seq >= %s "
            "ORDER BY seq",
            [seq],
        )
        rows = cursor.fetchall()
        cursor.execute("SELECT hash FROM audit_auditevent WHERE seq = %s", [seq - 1])
        prev = cursor.fetchone()[0]
    for row in rows:
        content = list(row[2:])
        if hasher == "sha256":
            digest = unkeyed_hash(row[0], row[1], prev, content)
        else:
            digest = keyed_hash(key, row[0], row[1], prev, content)
        as_owner(
            "UPDATE audit_auditevent SET prev_hash = %s, hash = %s WHERE id = %s",
            [prev, digest, row[1]],
        )
        prev = digest


def test_an_untouched_chain_verifies():
    sealed_chain(5)
    check = verify_chain()
    assert check.ok, check.problem
    assert check.checked == 5


def test_editing_a_middle_row_is_named_as_content_edited():
    events = sealed_chain(5)
    as_owner(
        "UPDATE audit_auditevent SET summary = 'nothing to see' WHERE id = %s",
        [events[2].pk],
    )
    check = verify_chain()
    assert (check.ok, check.kind, check.first_bad_id) == (
        False,
        Damage.CONTENT_EDITED,
        events[2].pk,
    )


def test_editing_the_stored_json_is_caught_too():
    events = sealed_chain(3)
    as_owner(
        "UPDATE audit_auditevent SET output = '{\"tools\": []}' WHERE id = %s",
        [events[1].pk],
    )
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.CONTENT_EDITED, events[1].pk)


def test_deleting_a_middle_row_breaks_the_link():
    events = sealed_chain(5)
    as_owner("DELETE FROM audit_auditevent WHERE id = %s", [events[2].pk])
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.LINK_BROKEN, events[3].pk)
    assert "1 record(s) missing" in check.problem


def test_rewriting_a_row_and_rehashing_with_plain_sha256_is_named():
    events = sealed_chain(5)
    as_owner(
        "UPDATE audit_auditevent SET summary = 'rewritten' WHERE id = %s",
        [events[2].pk],
    )
    rehash_from(events[2].seq, "sha256")
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.BAD_KEY, events[2].pk)
    assert "without the audit key" in check.problem


def test_rewriting_and_rehashing_with_another_key_is_caught():
    events = sealed_chain(5)
    as_owner(
        "UPDATE audit_auditevent SET summary = 'rewritten' WHERE id = %s",
        [events[3].pk],
    )
    rehash_from(events[3].seq, "hmac", key=b"the forger's own key")
    check = verify_chain()
    assert not check.ok
    assert check.first_bad_id == events[3].pk
    assert check.kind == Damage.CONTENT_EDITED


def test_downgrading_rows_to_the_unkeyed_legacy_hash_is_named():
    events = sealed_chain(3)
    as_owner(
        "UPDATE audit_auditevent SET hash_version = 1 WHERE id = %s", [events[1].pk]
    )
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.BAD_KEY, events[1].pk)


def test_deleting_the_tail_is_named_against_the_last_checkpoint():
    events = sealed_chain(6)
    checkpoint = checkpoint_if_due(force=True)
    assert checkpoint is not None and checkpoint["head_id"] == events[-1].pk
    as_owner("DELETE FROM audit_auditevent WHERE id >= %s", [events[4].pk])
    check = verify_chain()
    assert check.kind == Damage.TAIL_MISSING
    assert check.first_bad_id == events[3].pk
    assert (
        f"the chain ends at id {events[3].pk} but the checkpoint of "
        f"{checkpoint['time']} saw id {events[5].pk}: 2 records missing at the tail"
    ) == check.problem


def test_a_truncate_is_refused_by_the_trigger():
    sealed_chain(2)
    with connection.cursor() as cursor:
        cursor.execute("RESET quiver.audit_truncate")
        with (
            pytest.raises(DatabaseError, match="TRUNCATE refused"),
            transaction.atomic(),
        ):
            cursor.execute("TRUNCATE audit_auditevent")
        cursor.execute("SET quiver.audit_truncate = 'on'")
    assert AuditEvent.objects.count() == 2


def test_a_truncate_by_the_owner_is_named_against_the_last_checkpoint():
    events = sealed_chain(4)
    checkpoint_if_due(force=True)
    as_owner("TRUNCATE audit_auditevent")
    check = verify_chain()
    assert check.kind == Damage.TRUNCATED
    assert check.first_bad_id == events[-1].pk
    assert "the audit table is empty" in check.problem


def test_a_chain_rebuilt_from_scratch_does_not_match_its_checkpoint():
    events = sealed_chain(3)
    checkpoint_if_due(force=True)
    as_owner("TRUNCATE audit_auditevent")
    sealed_chain(3)
    check = verify_chain()
    assert check.kind == Damage.CHECKPOINT_MISMATCH
    assert f"saw id {events[2].pk}" in check.problem


def test_a_forged_checkpoint_line_is_named(audit_checkpoints_per_test):
    sealed_chain(2)
    checkpoint_if_due(force=True)
    line = json.loads(audit_checkpoints_per_test.read_text())
    line["head_seq"], line["count"] = 1, 1
    audit_checkpoints_per_test.write_text(json.dumps(line) + "\n")
    check = verify_chain()
    assert check.kind == Damage.BAD_CHECKPOINT
    assert "signature" in check.problem


def test_a_removed_checkpoint_line_is_named(audit_checkpoints_per_test):
    sealed_chain(2)
    checkpoint_if_due(force=True)
    record("later")
    seal_pending()
    checkpoint_if_due(force=True)
    lines = audit_checkpoints_per_test.read_text().splitlines()
    audit_checkpoints_per_test.write_text(lines[1] + "\n")
    check = verify_chain()
    assert check.kind == Damage.BAD_CHECKPOINT
    assert "line was removed" in check.problem


def test_rows_sealed_with_a_key_missing_from_the_keyring_are_named(settings):
    events = sealed_chain(2)
    settings.QUIVER_AUDIT_KEY = "a-rotated-key-" + hashlib.sha256(b"x").hexdigest()
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.UNKNOWN_KEY, events[0].pk)
    assert "not in the audit keyring" in check.problem


def test_rows_left_unsealed_too_long_are_named(settings):
    event = record("never sealed")
    settings.QUIVER_AUDIT_SEAL_MAX_DELAY_S = 0
    check = verify_chain(seal=False)
    assert (check.kind, check.first_bad_id) == (Damage.UNSEALED, event.pk)


def test_a_function_the_owner_puts_first_on_the_search_path_is_not_used():
    """A to_char() of the owner's, searched before pg_catalog, would let the
    database show verify another timestamp than the row's; verify must not call
    it (it answers nonsense, so a chain checked with it would fail)."""
    sealed_chain(3)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION public.to_char(timestamp, text) RETURNS text "
            "LANGUAGE sql AS $$ SELECT 'forged' $$"
        )
        cursor.execute("SET LOCAL search_path = public, pg_catalog")
        cursor.execute("SELECT to_char(now()::timestamp, 'YYYY')")
        assert cursor.fetchone()[0] == "forged"
    check = verify_chain()
    assert check.ok, check.problem
    assert check.checked == 3
