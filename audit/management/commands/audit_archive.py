"""Move audit segments older than QUIVER_AUDIT_RETENTION_DAYS to a JSONL file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.archive import ArchiveError, archive_old_segments


class Command(BaseCommand):
    help = (
        "Archive whole old segments of the audit chain (up to a signed checkpoint) "
        "to a file that `audit_verify --archive FILE` checks on its own."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--out-dir",
            type=Path,
            help="where the archive file goes (default: <state dir>/audit-archive)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            archived = archive_old_segments(out_dir=options["out_dir"])
        except ArchiveError as exc:
            raise CommandError(str(exc)) from exc
        if archived is None:
            self.stdout.write("Nothing to archive: no whole segment is old enough.")
            return
        self.stdout.write(
            f"Archived {archived.rows} audit records (seq {archived.from_seq} to "
            f"{archived.through_seq}) to {archived.path}"
        )
