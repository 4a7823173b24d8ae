"""Rotate the audit key: a new key in QUIVER_AUDIT_KEY_FILE, the old one kept."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from audit.rotation import RotationError, rotate_key


class Command(BaseCommand):
    help = (
        "Write a new audit key into QUIVER_AUDIT_KEY_FILE, keep the old one in "
        "QUIVER_AUDIT_OLD_KEYS_FILE, and record the rotation as an audit event and a "
        "checkpoint signed by both keys."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            record = rotate_key(actor=None)
        except RotationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Audit key {record['old_key_id']} retired; {record['new_key_id']} signs "
            f"from seq {record['first_seq']} (rotation checkpoint at id "
            f"{record['head_id']})."
        )
