"""Rotating the audit key where the key files cannot be written (a Kubernetes
Secret): the rotation is signed with a key the operator gives, no file is written,
and until a process has the new key it seals nothing after the rotation."""

from __future__ import annotations

import io
import json
import logging
import os
import secrets
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from audit import sealing
from audit.checkpoints import checkpoint_if_due, last_record
from audit.choices import EventType
from audit.hashing import old_signature_ok, signature_ok
from audit.keyring import fingerprint, keyring
from audit.models import AuditEvent
from audit.rotation import RotationError, rotate_key
from audit.services import record_event, seal_and_checkpoint, seal_pending, verify_chain

pytestmark = pytest.mark.django_db


@pytest.fixture
def from_a_secret(settings: Any, tmp_path: Path) -> dict[str, Path]:
    """The key and the retired keys as a Secret mounts them: files this process
    only reads (the test checks that nothing writes them)."""
    mount = tmp_path / "secret"
    mount.mkdir()
    key = mount / "audit-key"
    key.write_text(secrets.token_hex(32))
    settings.QUIVER_AUDIT_KEY = ""
    settings.QUIVER_AUDIT_KEY_FILE = str(key)
    settings.QUIVER_AUDIT_OLD_KEYS_FILE = mount / "audit-old-keys"
    return {"mount": mount, "key": key, "old": mount / "audit-old-keys"}


@pytest.fixture
def new_key(tmp_path: Path) -> Path:
    path = tmp_path / "new-audit-key"
    path.write_text(secrets.token_hex(32) + "\n")
    return path


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=summary,
        input={"query": summary},
        output={},
    )


def listing(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in folder.iterdir()}


def replace(path: Path, text: str) -> None:
    """A new file renamed over the old, as the kubelet updates a Secret's files."""
    temporary = path.with_name(f".{path.name}.new")
    temporary.write_text(text)
    os.replace(temporary, path)


def put_in_place(secret: dict[str, Path], new_key: Path) -> None:
    """What the operator does next: the new key in the Secret, the old retired."""
    old = secret["key"].read_text()
    replace(secret["old"], old + "\n")
    replace(secret["key"], new_key.read_text())


def test_the_rotation_is_signed_with_the_given_key_and_writes_no_file(
    from_a_secret, new_key
):
    record("before")
    seal_and_checkpoint()
    before = listing(from_a_secret["mount"])
    old_id = keyring().current_id
    rotation = rotate_key(actor=None, new_key_file=new_key)
    new_id = fingerprint(new_key.read_text().strip().encode())
    assert listing(from_a_secret["mount"]) == before
    assert (rotation["old_key_id"], rotation["new_key_id"]) == (old_id, new_id)
    assert rotation["key_id"] == new_id
    event = AuditEvent.objects.get(event_type=EventType.KEY_ROTATED)
    assert event.key_id == new_id and event.seq == rotation["first_seq"]
    put_in_place(from_a_secret, new_key)
    assert signature_ok(rotation) and old_signature_ok(rotation)


def test_a_process_without_the_new_key_seals_and_signs_nothing_after_it(
    from_a_secret, new_key, caplog, monkeypatch
):
    monkeypatch.setattr(sealing, "_warned_at", [float("-inf")])
    record("before")
    seal_and_checkpoint()
    rotation = rotate_key(actor=None, new_key_file=new_key)
    waiting = record("after the rotation, before the Secret reaches this pod")
    with caplog.at_level(logging.WARNING, logger="audit.sealing"):
        assert seal_pending() == 0
        assert checkpoint_if_due(force=True) is None
    waiting.refresh_from_db()
    assert waiting.seq is None
    assert last_record() == rotation
    assert rotation["new_key_id"] in caplog.text
    assert keyring().current_id in caplog.text


def test_once_the_new_key_is_in_place_the_chain_goes_on_and_verifies(
    from_a_secret, new_key
):
    for n in range(2):
        record(f"before {n}")
    seal_and_checkpoint()
    old_id = keyring().current_id
    rotation = rotate_key(actor=None, new_key_file=new_key)
    record("after")
    put_in_place(from_a_secret, new_key)
    seal_pending()
    checkpoint_if_due(force=True)
    keys = list(AuditEvent.objects.order_by("seq").values_list("key_id", flat=True))
    assert keys == [old_id, old_id, rotation["new_key_id"], rotation["new_key_id"]]
    check = verify_chain()
    assert check.ok, check.problem
    assert check.checked == 4


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("short", "at least 32 characters"),
        ("a" * 40 + "\n" + "b" * 40, "one line"),
    ],
)
def test_a_new_key_that_is_too_weak_is_refused(from_a_secret, tmp_path, text, rule):
    path = tmp_path / "weak"
    path.write_text(text)
    with pytest.raises(RotationError, match=rule):
        rotate_key(actor=None, new_key_file=path)
    assert not AuditEvent.objects.filter(event_type=EventType.KEY_ROTATED).exists()


def test_the_current_key_or_a_retired_one_is_refused(from_a_secret, tmp_path):
    retired = secrets.token_hex(32)
    replace(from_a_secret["old"], retired + "\n")
    for text in (from_a_secret["key"].read_text(), retired):
        path = tmp_path / "again"
        path.write_text(text)
        with pytest.raises(RotationError, match="current key or a retired one"):
            rotate_key(actor=None, new_key_file=path)


def test_a_missing_new_key_file_is_named(from_a_secret, tmp_path):
    with pytest.raises(RotationError, match="cannot read"):
        rotate_key(actor=None, new_key_file=tmp_path / "nowhere")


def test_a_process_that_lacks_the_chains_key_cannot_rotate_it(
    from_a_secret, new_key, settings, tmp_path
):
    record("sealed with the chain's key")
    seal_and_checkpoint()
    stale = tmp_path / "another-key"
    stale.write_text(secrets.token_hex(32))
    settings.QUIVER_AUDIT_KEY_FILE = str(stale)
    with pytest.raises(RotationError, match="head is sealed with key"):
        rotate_key(actor=None, new_key_file=new_key)
    assert not AuditEvent.objects.filter(event_type=EventType.KEY_ROTATED).exists()


def test_a_key_changed_without_a_rotation_seals_nothing(from_a_secret, settings):
    """Fail closed: a process given another key (a Secret edited by hand) never
    extends the chain, which verify would call a key change with no rotation."""
    record("sealed")
    seal_and_checkpoint()
    replace(from_a_secret["key"], secrets.token_hex(32))
    event = record("waits")
    assert seal_pending() == 0
    assert checkpoint_if_due(force=True) is None
    event.refresh_from_db()
    assert event.seq is None


def test_the_command_rotates_to_the_given_key_and_prints_no_key(from_a_secret, new_key):
    record("a")
    out = io.StringIO()
    call_command("audit_rotate_key", new_key_file=new_key, stdout=out)
    text = out.getvalue()
    assert new_key.read_text().strip() not in text
    assert from_a_secret["key"].read_text() not in text
    rotation = last_record() or {}
    assert rotation["kind"] == "rotation"
    assert f"Now make key {rotation['new_key_id']} the audit key" in text
    assert json.dumps(rotation)  # a plain record


def test_the_command_names_a_refused_key(from_a_secret, tmp_path):
    path = tmp_path / "short"
    path.write_text("short")
    with pytest.raises(CommandError, match="at least 32 characters"):
        call_command("audit_rotate_key", new_key_file=path)
