"""Bring the dashboard's hourly summary up to date, or rebuild it from the events."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from audit.rollup import catch_up


class Command(BaseCommand):
    help = (
        "Sum the sealed audit events not yet in the dashboard's hourly summary "
        "(--rebuild: empty it and sum every event again, e.g. after audit_archive)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="recompute the whole summary from the events",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        mark = catch_up(rebuild=options["rebuild"])
        took = time.perf_counter() - started
        verb = "Rebuilt" if options["rebuild"] else "Brought up to date"
        self.stdout.write(
            f"{verb} the dashboard summary through seq {mark} in {took:.1f}s."
        )
