"""python manage.py create_person NAME [--group G]... [--catalogs a,b]

A person who signs in to the console: ``--group admin``, ``curator``,
``compliance`` or ``approver`` (and any role group), repeatable; ``--catalogs``
limits them to those catalogs (without it: every catalog). Prints a one-time
password alone on the last line of stdout. Audited (``access_changed``, actor
system)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from identity.services.people import create_person


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


class Command(BaseCommand):
    help = (
        "Create a person with groups and catalogs; prints a one-time password "
        "alone on the last line."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--group",
            action="append",
            default=[],
            dest="groups",
            help="admin, curator, compliance, approver or a role group; repeat",
        )
        parser.add_argument(
            "--catalogs",
            type=_csv,
            default=None,
            help="comma-separated catalog slugs; without it, every catalog",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            person, password = create_person(
                options["username"],
                groups=options["groups"],
                catalogs=options["catalogs"],
                actor=None,
                via="create_person",
            )
        except ValidationError as exc:
            messages = [
                f"{field}: {message}"
                for field, messages in exc.message_dict.items()
                for message in messages
            ]
            raise CommandError("; ".join(messages)) from exc
        groups = ", ".join(sorted(person.groups.values_list("name", flat=True)))
        catalogs = ", ".join(options["catalogs"] or []) or "all catalogs"
        self.stdout.write(
            f"Created {person.username!r} (groups: {groups or 'none'}; catalogs: "
            f"{catalogs}). Their one-time password, shown only now:"
        )
        self.stdout.write(password)
