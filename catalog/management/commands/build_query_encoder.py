"""manage.py build_query_encoder [--max-tools N] [--epochs N] [--if-due]."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.services.query_encoder import (
    DEFAULT_MAX_TOOLS,
    QueryEncoderError,
    build_is_due,
    build_query_encoder,
    single_build,
)
from embeddings.static_training import TrainingSetup


class Command(BaseCommand):
    help = (
        "Train the static query encoder (a request's sentences in well under a "
        "millisecond) from the active tools of every catalog."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--max-tools",
            type=int,
            default=DEFAULT_MAX_TOOLS,
            help=f"learn from at most this many tools (default {DEFAULT_MAX_TOOLS})",
        )
        parser.add_argument(
            "--epochs", type=int, default=TrainingSetup.epochs, help="passes"
        )
        parser.add_argument(
            "--if-due",
            action="store_true",
            help="only when there is none, or the catalog has much outgrown it",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["max_tools"] < 1:
            raise CommandError("--max-tools: must be at least 1")
        if options["epochs"] < 1:
            raise CommandError("--epochs: must be at least 1")
        if not options["if_due"]:
            self._build(options)
            return
        with single_build() as mine:
            if not mine:
                self.stdout.write("Another build of the static query encoder runs.")
            elif not build_is_due():
                self.stdout.write("The static query encoder is up to date.")
            else:
                self._build(options)

    def _build(self, options: dict[str, Any]) -> None:
        began = time.monotonic()

        def say(message: str) -> None:
            self.stdout.write(f"[{time.monotonic() - began:6.1f}s] {message}")

        try:
            encoder_id = build_query_encoder(
                options["max_tools"], TrainingSetup(epochs=options["epochs"]), say
            )
        except QueryEncoderError as exc:
            raise CommandError(str(exc)) from exc
        say(f"built {encoder_id}")
