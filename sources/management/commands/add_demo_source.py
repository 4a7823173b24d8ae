"""python manage.py add_demo_source [--catalog SLUG] [--stdio-name ENTRY]

Puts the demo MCP server (``catalog.demo.server``: weather, email, files) behind
the demo catalog's tools of the same names, so ``make run``'s tour can run calls:
a stdio source ``demo`` from entry ENTRY (``demo``) of the settings file
(``QUIVER_SOURCES_FILE``; ``make run`` writes one naming the server), its links to
the catalog's tools (``sources.links``) and its first sync, in one transaction.

Safe to run at every start: once the source was added (its ``source_changed``
event is in the audit log) nothing happens again, even if someone deleted it
since. Without the entry, the catalog or any of the demo tools, it says why and
changes nothing."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from audit.choices import EventType
from audit.models import AuditEvent
from catalog.demo.server import listing
from catalog.models import Catalog
from sources.first_steps import DEMO_SOURCE as SOURCE
from sources.links import link_tools
from sources.services import add_stdio_source
from sources.stdio import StdioConfigError, stdio_spec


class Command(BaseCommand):
    help = "Add the demo MCP server as a source behind the demo catalog's tools."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--catalog", default="default", help="the catalog's slug")
        parser.add_argument(
            "--stdio-name", default=SOURCE, help="the entry in the settings file"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        catalog = Catalog.objects.filter(slug=options["catalog"]).first()
        why = self._why_not(catalog, options["stdio_name"])
        if why:
            self.stdout.write(f"The demo source is not added: {why}.")
            return
        assert catalog is not None
        try:
            with transaction.atomic():
                added = add_stdio_source(
                    catalog, name=SOURCE, stdio_name=options["stdio_name"]
                )
                linked = link_tools(added.source, listing(), actor=None)
        except ValidationError as exc:
            messages = [m for msgs in exc.message_dict.values() for m in msgs]
            raise CommandError("; ".join(messages)) from exc
        self.stdout.write(
            f"Added the demo source {SOURCE!r} behind {len(linked)} tools of "
            f"{catalog.slug!r} ({', '.join(linked)}); its first sync is job "
            f"{added.sync_job.pk}."
        )

    def _why_not(self, catalog: Catalog | None, stdio_name: str) -> str:
        if catalog is None:
            return "there is no such catalog"
        if _added_before(catalog):
            return "it was added before (see the audit log)"
        try:
            stdio_spec(stdio_name)
        except StdioConfigError as exc:
            return str(exc)
        names = set(listing())
        have = set(catalog.tools.filter(name__in=names).values_list("name", flat=True))
        if have != names:
            return f"the catalog lacks {', '.join(sorted(names - have))}"
        return ""


def _added_before(catalog: Catalog) -> bool:
    return AuditEvent.objects.filter(
        event_type=EventType.SOURCE_CHANGED,
        catalog_slug=catalog.slug,
        input__action="create",
        input__source=SOURCE,
    ).exists()
