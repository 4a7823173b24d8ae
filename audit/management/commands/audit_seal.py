"""Seal pending audit rows now and write a checkpoint (cron, scripts, tests)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from audit.checkpoints import checkpoint_if_due
from audit.services import seal_pending


class Command(BaseCommand):
    help = "Seal pending audit rows; write a checkpoint if due (or --checkpoint)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--checkpoint",
            action="store_true",
            help="write a checkpoint even if none is due",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        sealed = seal_pending()
        checkpoint = checkpoint_if_due(force=options["checkpoint"])
        where = f", checkpoint at id {checkpoint['head_id']}" if checkpoint else ""
        self.stdout.write(f"Sealed {sealed} audit records{where}.")
