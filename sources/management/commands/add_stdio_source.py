"""python manage.py add_stdio_source CATALOG NAME [--stdio-name ENTRY]
[--timeout-seconds S] [--max-result-bytes N]

Adds a stdio source to catalog CATALOG: the MCP server started by the command of
entry ENTRY (NAME by default) under "stdio" in the server's settings file
(QUIVER_SOURCES_FILE). This is the only way to add one: the API and the console
refuse kind "stdio". The command acts as the system (whoever runs it already holds
the server's files); the source is one ``source_changed`` audit event, and its
first sync is queued (the job's id is printed, to follow it)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.models import Catalog
from sources.services import add_stdio_source


class Command(BaseCommand):
    help = "Add a stdio source whose command is in QUIVER_SOURCES_FILE."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("catalog", help="the catalog's slug")
        parser.add_argument("name", help="the source's name (its tools' namespace)")
        parser.add_argument(
            "--stdio-name",
            default=None,
            help="the entry under 'stdio' in the settings file (default: NAME)",
        )
        parser.add_argument("--timeout-seconds", type=float, default=30.0)
        parser.add_argument("--max-result-bytes", type=int, default=100_000)

    def handle(self, *args: Any, **options: Any) -> None:
        catalog = Catalog.objects.filter(slug=options["catalog"]).first()
        if catalog is None:
            raise CommandError(f"catalog: no catalog {options['catalog']!r}")
        try:
            added = add_stdio_source(
                catalog,
                name=options["name"],
                stdio_name=options["stdio_name"] or options["name"],
                timeout_seconds=options["timeout_seconds"],
                max_result_bytes=options["max_result_bytes"],
            )
        except ValidationError as exc:
            messages = [m for msgs in exc.message_dict.values() for m in msgs]
            raise CommandError("; ".join(messages)) from exc
        source, job = added.source, added.sync_job
        self.stdout.write(
            f"Added stdio source {source.name!r} (id {source.pk}) to catalog "
            f"{catalog.slug!r}; its first sync is queued as job {job.pk} "
            f"(GET /api/v1/jobs/{job.pk}, or the console's source page)."
        )
