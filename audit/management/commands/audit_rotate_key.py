"""Rotate the audit key: a new key in QUIVER_AUDIT_KEY_FILE, the old one kept; or,
where the key files cannot be written (a Kubernetes Secret), to a key given in a
file, leaving putting it in place to the operator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.rotation import RotationError, rotate_key


class Command(BaseCommand):
    help = (
        "Write a new audit key into QUIVER_AUDIT_KEY_FILE, keep the old one in "
        "QUIVER_AUDIT_OLD_KEYS_FILE, and record the rotation as an audit event and a "
        "checkpoint signed by both keys; with --new-key-file, rotate to that key "
        "and write no key file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--new-key-file",
            type=Path,
            help="the new key, in a file (/dev/stdin reads it from the standard "
            "input); then make it QUIVER_AUDIT_KEY_FILE's and add the old key to "
            "QUIVER_AUDIT_OLD_KEYS_FILE everywhere",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        given = options["new_key_file"]
        try:
            record = rotate_key(actor=None, new_key_file=given)
        except RotationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Audit key {record['old_key_id']} retired; {record['new_key_id']} signs "
            f"from seq {record['first_seq']} (rotation checkpoint at id "
            f"{record['head_id']})."
        )
        if given is not None:
            self.stdout.write(
                f"Now make key {record['new_key_id']} the audit key of every process "
                f"and add key {record['old_key_id']} to the retired keys: until a "
                "process has the new key, it seals nothing."
            )
