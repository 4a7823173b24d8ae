"""Check the audit chain (or an archive file) and name the first damage found."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.archive import verify_archive
from audit.services import ChainCheck, parse_since, verify_chain
from audit.verify import CHECKPOINT_SOURCES


class Command(BaseCommand):
    help = (
        "Verify the audit chain against its keyed hashes and signed checkpoints; "
        "exit 1 naming the first bad record and the kind of damage."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", help="an audit id or an ISO date to start at")
        parser.add_argument(
            "--archive", type=Path, help="verify this audit_archive file on its own"
        )
        parser.add_argument(
            "--no-seal",
            action="store_true",
            help="check the table as it stands, without sealing pending rows first",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=2,
            help="threads, each on its own connection, splitting the chain (default 2)",
        )
        parser.add_argument(
            "--checkpoints",
            choices=CHECKPOINT_SOURCES,
            default=None,
            help="check against the configured checkpoint store "
            "(QUIVER_AUDIT_CHECKPOINT_STORE, the default), the file, the Postgres "
            "table, or the copy in the QUIVER_AUDIT_CHECKPOINT_S3 bucket",
        )
        parser.add_argument("--json", action="store_true", help="print the result")

    def handle(self, *args: Any, **options: Any) -> None:
        check = (
            verify_archive(options["archive"])
            if options["archive"]
            else self._verify(options)
        )
        self._report(check, as_json=options["json"])
        if not check.ok:
            raise CommandError(f"audit chain damaged: {check.kind}")

    def _verify(self, options: dict[str, Any]) -> ChainCheck:
        source = options["checkpoints"]
        if source == "s3" and not settings.QUIVER_AUDIT_CHECKPOINT_S3:
            raise CommandError("--checkpoints s3: QUIVER_AUDIT_CHECKPOINT_S3 is unset")
        since = None
        if options["since"]:
            try:
                since = parse_since(options["since"])
            except ValueError as exc:
                raise CommandError(f"--since: {exc}") from exc
        return verify_chain(
            since=since,
            seal=not options["no_seal"],
            workers=max(1, options["workers"]),
            checkpoints=source,
        )

    def _report(self, check: ChainCheck, *, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(asdict(check)))
            return
        speed = f"{check.checked} records in {check.seconds:.2f}s"
        for name, sink in check.sinks.items():
            if sink["behind"]:
                self.stdout.write(
                    f"Checkpoint sink {name} is behind ({sink['failures']} failed "
                    f"deliveries; last: {sink['last_error']})"
                )
        if check.ok:
            self.stdout.write(
                f"OK: {speed} ({check.per_second}/s), head id "
                f"{check.head_id}, last checkpoint {check.checkpoint_time}"
            )
            return
        self.stdout.write(
            f"DAMAGED ({check.kind}) at id {check.first_bad_id}"
            f" (seq {check.first_bad_seq}): {check.problem}\n{speed} were good"
        )
