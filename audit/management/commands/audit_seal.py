"""Seal pending audit rows now and write a checkpoint (cron, scripts, tests), or
keep sealing as a process of its own (``--every``: a cluster's sealer)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.checkpoints import checkpoint_if_due
from audit.sealing import run_sealer
from audit.services import seal_pending


class Command(BaseCommand):
    help = (
        "Seal pending audit rows; write a checkpoint if due (or --checkpoint); "
        "with --every, keep doing so until stopped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--checkpoint",
            action="store_true",
            help="write a checkpoint even if none is due",
        )
        parser.add_argument(
            "--every",
            type=float,
            help="keep sealing every this many seconds until SIGTERM or SIGINT",
        )
        parser.add_argument(
            "--heartbeat",
            type=Path,
            help="with --every: touch this file after each round (a liveness probe)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["every"] is not None:
            self._run(options["every"], options["heartbeat"])
            return
        sealed = seal_pending()
        checkpoint = checkpoint_if_due(force=options["checkpoint"])
        where = f", checkpoint at id {checkpoint['head_id']}" if checkpoint else ""
        self.stdout.write(f"Sealed {sealed} audit records{where}.")

    def _run(self, every: float, heartbeat: Path | None) -> None:
        if every <= 0:
            raise CommandError("--every: must be more than 0 seconds")
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        self.stdout.write(f"Sealing the audit chain every {every:g} s.")
        self.stdout.flush()
        run_sealer(stop, every, heartbeat)
        self.stdout.write("Sealer stopped.")
