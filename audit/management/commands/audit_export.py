"""Export audit events as CSV or JSONL from the shell, with the console's filters."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django import forms
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.export import FORMATS, export_lines
from audit.filters import AuditFilterForm, FilterError, filter_events
from audit.models import AuditEvent
from audit.services import seal_pending


class Command(BaseCommand):
    help = (
        "Write the audit events matching the filters (all by default), oldest first, "
        "as CSV or JSONL, each row with its seq and hash; streamed from a "
        "server-side cursor."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=FORMATS, default="jsonl")
        parser.add_argument("--out", type=Path, help="a file (default: stdout)")
        for name, field in AuditFilterForm.base_fields.items():
            flag = f"--{name.replace('_', '-')}"
            if isinstance(field, forms.BooleanField):
                parser.add_argument(flag, action="store_true", help=str(field.label))
            else:
                parser.add_argument(flag, help=str(field.label))

    def handle(self, *args: Any, **options: Any) -> None:
        params = {
            name: options[name]
            for name in AuditFilterForm.base_fields
            if options.get(name) not in (None, False)
        }
        try:
            events = filter_events(AuditEvent.objects.all(), params)
        except FilterError as exc:
            raise CommandError(f"--{str(exc).replace('_', '-')}") from exc
        seal_pending()
        out = options["out"]
        with out.open("w", encoding="utf-8") if out else _stdout() as stream:
            for line in export_lines(events, options["format"]):
                stream.write(line)


class _stdout:
    """stdout as a context manager that does not close it."""

    def __enter__(self) -> Any:
        return sys.stdout

    def __exit__(self, *exc: object) -> None:
        sys.stdout.flush()
