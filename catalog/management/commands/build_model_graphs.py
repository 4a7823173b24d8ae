"""manage.py build_model_graphs [--into DIR]: the bundled model's ONNX graphs, ahead."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from embeddings.backends import local_model_path
from embeddings.onnx_encoder import ensure_graphs


class Command(BaseCommand):
    help = (
        "Build the bundled model's fp32 and int8 ONNX graphs into a folder (the "
        "Docker image bakes them), so no process builds them at start."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--into",
            type=Path,
            help="the folder (default: QUIVER_MODEL_GRAPHS_DIR, else "
            "<state dir>/models)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        configured = os.environ.get("QUIVER_MODEL_GRAPHS_DIR")
        folder = options["into"] or (
            Path(configured) if configured else settings.QUIVER_STATE_DIR / "models"
        )
        files = ensure_graphs(local_model_path(), folder)
        for precision, path in files.items():
            self.stdout.write(f"{precision}: {path}")
