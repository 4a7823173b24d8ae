"""Rotating the audit key: the new key signs from the rotation on, the old one stays
in the keyring for what it signed, and the rotation itself is proven by both."""

from __future__ import annotations

import json
import secrets
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from audit.checkpoints import checkpoint_if_due
from audit.choices import EventType
from audit.hashing import CONTENT_SQL, keyed_hash, sign, signature_ok
from audit.keyring import fingerprint, keyring
from audit.models import AuditEvent
from audit.rotation import rotate_key
from audit.services import (
    Damage,
    record_event,
    seal_and_checkpoint,
    seal_pending,
    verify_chain,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def key_files(settings: Any, tmp_path: Path) -> dict[str, Path]:
    """The audit key in a file of this test's own, as `make run` keeps it."""
    key_file = tmp_path / "audit_key"
    key_file.write_text(secrets.token_hex(32) + "\n")
    settings.QUIVER_AUDIT_KEY = ""
    settings.QUIVER_AUDIT_KEY_FILE = str(key_file)
    settings.QUIVER_AUDIT_OLD_KEYS_FILE = tmp_path / "audit_old_keys"
    return {"key": key_file, "old": tmp_path / "audit_old_keys"}


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=summary,
        input={"query": summary},
        output={},
    )


def chain_across_a_rotation() -> tuple[list[AuditEvent], dict[str, Any]]:
    """Three events sealed with the first key, a rotation, two with the new one."""
    for n in range(3):
        record(f"before {n}")
    seal_and_checkpoint()
    rotation = rotate_key(actor=None)
    for n in range(2):
        record(f"after {n}")
    seal_pending()
    checkpoint_if_due(force=True)
    return list(AuditEvent.objects.order_by("seq")), rotation


def test_a_chain_across_a_rotation_verifies(key_files):
    old_id = keyring().current_id
    events, rotation = chain_across_a_rotation()
    new_id = keyring().current_id
    assert new_id != old_id
    assert [event.key_id for event in events] == [old_id] * 3 + [new_id] * 3
    assert (rotation["old_key_id"], rotation["new_key_id"]) == (old_id, new_id)
    check = verify_chain()
    assert check.ok, check.problem
    assert check.checked == 6


def test_the_rotation_is_an_audit_event_and_a_checkpoint_signed_by_both_keys(
    key_files, audit_checkpoints_per_test
):
    old_key = key_files["key"].read_text().strip().encode()
    events, rotation = chain_across_a_rotation()
    new_key = key_files["key"].read_text().strip().encode()
    event = AuditEvent.objects.get(event_type=EventType.KEY_ROTATED)
    assert event.seq == rotation["first_seq"] == rotation["head_seq"] == 4
    assert event.input == {
        "old_key_id": fingerprint(old_key),
        "new_key_id": rotation["new_key_id"],
    }
    lines = [
        json.loads(line) for line in audit_checkpoints_per_test.read_text().splitlines()
    ]
    assert [line["kind"] for line in lines] == ["checkpoint", "rotation", "checkpoint"]
    assert lines[1] == rotation
    assert signature_ok(rotation, new_key)
    unsigned = {k: v for k, v in rotation.items() if k not in ("sig", "old_sig")}
    assert rotation["old_sig"] == sign(unsigned, old_key)
    assert key_files["old"].read_text().split() == [old_key.decode()]


def test_without_the_old_key_verify_names_unknown_key_at_the_first_old_row(key_files):
    events, _ = chain_across_a_rotation()
    key_files["old"].unlink()
    check = verify_chain()
    assert (check.ok, check.kind) == (False, Damage.UNKNOWN_KEY)
    assert check.first_bad_id == events[0].pk
    assert "not in the audit keyring" in check.problem


def rehash_from(seq: int, key: bytes, key_id: str) -> None:
    """A forger's rewrite: recompute every hash from ``seq`` on with ``key``."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT seq, id, {CONTENT_SQL} FROM audit_auditevent WHERE seq >= %s "
            "ORDER BY seq",
            [seq],
        )
        rows = cursor.fetchall()
        cursor.execute("SELECT hash FROM audit_auditevent WHERE seq = %s", [seq - 1])
        prev = cursor.fetchone()[0]
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        for row in rows:
            digest = keyed_hash(key, row[0], row[1], prev, list(row[2:]))
            cursor.execute(
                "UPDATE audit_auditevent SET prev_hash = %s, hash = %s, key_id = %s "
                "WHERE id = %s",
                [prev, digest, key_id, row[1]],
            )
            prev = digest
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")


def rewrite(event: AuditEvent) -> None:
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE audit_auditevent SET summary = 'rewritten' WHERE id = %s",
            [event.pk],
        )
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")


def test_a_rewrite_rehashed_with_a_new_random_key_is_caught(key_files):
    events, _ = chain_across_a_rotation()
    forged = secrets.token_hex(32).encode()
    rewrite(events[4])
    rehash_from(events[4].seq, forged, fingerprint(forged))
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.UNKNOWN_KEY, events[4].pk)


def test_a_rewrite_rehashed_with_a_new_key_under_the_current_key_id_is_caught(
    key_files,
):
    events, _ = chain_across_a_rotation()
    rewrite(events[4])
    rehash_from(events[4].seq, secrets.token_hex(32).encode(), keyring().current_id)
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.CONTENT_EDITED, events[4].pk)


def test_rows_after_the_rotation_sealed_with_the_retired_key_are_named(key_files):
    old_key = key_files["key"].read_text().strip().encode()
    events, rotation = chain_across_a_rotation()
    rewrite(events[4])
    rehash_from(events[4].seq, old_key, rotation["old_key_id"])
    check = verify_chain()
    assert (check.kind, check.first_bad_id) == (Damage.BAD_KEY, events[4].pk)
    assert f"retired by the rotation at seq {rotation['first_seq']}" in check.problem


def test_a_checkpoint_line_signed_with_the_retired_key_after_the_rotation_is_named(
    key_files, audit_checkpoints_per_test
):
    old_key = key_files["key"].read_text().strip().encode()
    chain_across_a_rotation()
    lines = audit_checkpoints_per_test.read_text().splitlines()
    last = json.loads(lines[-1])
    last["key_id"] = fingerprint(old_key)
    last["sig"] = sign(last, old_key)
    audit_checkpoints_per_test.write_text("\n".join([*lines[:-1], json.dumps(last)]))
    check = verify_chain()
    assert check.kind == Damage.BAD_CHECKPOINT
    assert "no rotation line between" in check.problem


def test_the_command_rotates_the_key_file_and_keeps_the_old_key(key_files):
    before = key_files["key"].read_text().strip()
    record("a")
    call_command("audit_rotate_key")
    assert key_files["key"].read_text().strip() != before
    assert key_files["old"].read_text().split() == [before]
    assert (key_files["key"].stat().st_mode & 0o777) == 0o600
    assert verify_chain().ok


def test_the_command_refuses_a_key_that_is_not_in_a_file(settings, key_files):
    settings.QUIVER_AUDIT_KEY = "a-literal-key"
    with pytest.raises(CommandError, match="QUIVER_AUDIT_KEY_FILE"):
        call_command("audit_rotate_key")
    assert not AuditEvent.objects.filter(event_type=EventType.KEY_ROTATED).exists()
