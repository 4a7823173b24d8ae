"""Rotating the audit key: a new key signs from here on, the old one still verifies.

Under the chain lock the current key joins the retired keys (first, so it is never
lost), a new key replaces it, and the rotation is a ``key_rotated`` event plus a
``rotation`` checkpoint signed by both keys, so the link between them is proven by
the keys themselves. Where the key files cannot be written (a Kubernetes Secret) the
operator gives the new key and puts it in place.
The steps and what verify then checks: docs/explanation/audit-chain.md, Key rotation.
"""

from __future__ import annotations

import os
import secrets
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from audit.actors import Actor
from audit.checkpoints import Record, append_record
from audit.choices import EventType
from audit.keyring import fingerprint, keyring, read_key_file, signing_with
from audit.sealing import chain_head, head_key_id, seal_pending, take_chain_lock
from audit.services import record_event
from audit.sinks import deliver


class RotationError(RuntimeError):
    """The key cannot be rotated as configured."""


def _key_path() -> Path:
    if settings.QUIVER_AUDIT_KEY or not settings.QUIVER_AUDIT_KEY_FILE:
        raise RotationError(
            "the audit key must come from QUIVER_AUDIT_KEY_FILE to be rotated "
            "(a literal QUIVER_AUDIT_KEY or one derived from SECRET_KEY cannot be "
            "rewritten)"
        )
    return Path(settings.QUIVER_AUDIT_KEY_FILE)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new file beside ``path`` (mode 600), then rename it over
    ``path``: a reader sees the old key or the new one, never half of one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.new")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def _keep_old_key(old_text: str) -> None:
    path = Path(settings.QUIVER_AUDIT_OLD_KEYS_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
        handle.write(old_text + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def rotate_key(
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    new_key_file: Path | None = None,
) -> Record:
    """Rotate the audit key; return the signed ``rotation`` checkpoint. With
    ``new_key_file``, to the key that file holds, writing no key file."""
    if new_key_file is not None:
        return _rotate_to_given(new_key_file, actor, request_id)
    path = _key_path()
    old_text = read_key_file(path)
    old_key = old_text.encode()
    if keyring().current != old_key:
        raise RotationError("the key file changed while rotating; try again")
    seal_pending()  # rows written so far are sealed with the old key
    with transaction.atomic(), connection.cursor() as cursor:
        take_chain_lock(cursor, wait=True)
        _check_head(cursor, old_key)
        first_seq = chain_head(cursor)[0] + 1
        new_text = secrets.token_hex(32)
        _keep_old_key(old_text)
        _write_private(path, new_text)
        try:
            record = _record_rotation(
                cursor, actor, request_id, old_key, new_text.encode(), first_seq
            )
        except BaseException:
            _write_private(path, old_text)  # the old key stays current
            raise
    deliver(record)
    return record


MIN_KEY_CHARS = 32


def _rotate_to_given(
    new_key_file: Path, actor: Actor, request_id: uuid.UUID | None
) -> Record:
    try:
        new_text = read_key_file(new_key_file)
    except OSError as exc:
        raise RotationError(f"--new-key-file: cannot read {new_key_file}") from exc
    if len(new_text) < MIN_KEY_CHARS or "\n" in new_text:
        raise RotationError(
            f"--new-key-file: the new key must be one line of at least "
            f"{MIN_KEY_CHARS} characters"
        )
    new_key, ring = new_text.encode(), keyring()
    if fingerprint(new_key) in ring.keys:
        raise RotationError(
            "--new-key-file: that key is the current key or a retired one; "
            "give a new one"
        )
    seal_pending()  # rows written so far are sealed with the old key
    with transaction.atomic(), connection.cursor() as cursor:
        take_chain_lock(cursor, wait=True)
        _check_head(cursor, ring.current)
        first_seq = chain_head(cursor)[0] + 1
        with signing_with(new_key):
            record = _record_rotation(
                cursor, actor, request_id, ring.current, new_key, first_seq
            )
    deliver(record)
    return record


def _check_head(cursor: Any, old_key: bytes) -> None:
    """The chain's head must be sealed with the key being retired: a process that
    does not hold the chain's current key cannot hand it over."""
    head = head_key_id(cursor)
    if head not in ("", fingerprint(old_key)):
        raise RotationError(
            f"the chain's head is sealed with key {head}, not with this process's "
            f"key {fingerprint(old_key)}: rotate where the current key is"
        )


def _record_rotation(
    cursor: Any,
    actor: Actor,
    request_id: uuid.UUID | None,
    old_key: bytes,
    new_key: bytes,
    first_seq: int,
) -> Record:
    old_id, new_id = fingerprint(old_key), fingerprint(new_key)
    if keyring().current_id != new_id:
        raise RotationError("the new key file is not the key in use")
    record_event(
        EventType.KEY_ROTATED,
        actor=actor,
        request_id=request_id,
        summary=f"audit key {old_id} retired, {new_id} signs from seq {first_seq}",
        input={"old_key_id": old_id, "new_key_id": new_id},
        output={"first_seq": first_seq},
    )
    # The same session holds the lock: the new key seals the event.
    seal_pending(handover=old_id)
    head_seq, head_id, head_hash = chain_head(cursor)
    return append_record(
        {
            "kind": "rotation",
            "head_seq": head_seq,
            "head_id": head_id,
            "head_hash": head_hash,
            "count": head_seq,
            "first_seq": first_seq,
            "old_key_id": old_id,
            "new_key_id": new_id,
            "time": timezone.now().isoformat(),
        },
        old_key=old_key,
    )
