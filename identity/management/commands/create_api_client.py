"""python manage.py create_api_client NAME --scope agent|curator|compliance|admin
(--catalogs x,y | --all-catalogs) [--roles a,b] [--allow-unsafe] [--expires-days N]
[--rate-limit N] [--person USERNAME]

Every catalog is an explicit choice (``--all-catalogs``, or ``--catalogs '*'``),
never the meaning of no catalogs. The command acts as the system: whoever runs it
already holds the database, so no maker's limits apply and the key has no owner.
``--person`` binds the key to the person it acts for: it never holds more than
they hold at each request, and the audit names them beside the key."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from identity.choices import ApiScope
from identity.services import create_api_client
from identity.services.clients import person_named


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _expiry(days: int | None) -> datetime | None:
    if days is None:
        return None
    if days < 1:
        raise CommandError("--expires-days: must be at least 1")
    return timezone.now() + timedelta(days=days)


def _catalogs(listed: list[str], *, every: bool) -> list[str] | str:
    if every and listed and listed != ["*"]:
        raise CommandError("--catalogs and --all-catalogs: give one, not both")
    return "*" if every or listed == ["*"] else listed


class Command(BaseCommand):
    help = "Create an API client; prints its bearer key alone on the last line, once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--scope", required=True, choices=ApiScope.values)
        parser.add_argument("--roles", type=_csv, default=[])
        parser.add_argument(
            "--catalogs", type=_csv, default=[], help="slugs, or '*' for every one"
        )
        parser.add_argument(
            "--all-catalogs", action="store_true", help="the key sees every catalog"
        )
        parser.add_argument(
            "--allow-unsafe",
            action="store_true",
            help="the client may be offered tools marked unsafe (off by default)",
        )
        parser.add_argument(
            "--expires-days", type=int, default=None, help="the key stops after this"
        )
        parser.add_argument(
            "--rate-limit", type=int, default=None, help="selections per minute"
        )
        parser.add_argument(
            "--person", default=None, help="username of the person the key acts for"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            person = person_named(options["person"]) if options["person"] else None
            client, key = create_api_client(
                options["name"],
                options["scope"],
                options["roles"],
                _catalogs(options["catalogs"], every=options["all_catalogs"]),
                allow_unsafe=options["allow_unsafe"],
                expires=_expiry(options["expires_days"]),
                rate_limit_per_minute=options["rate_limit"],
                person=person,
            )
        except ValidationError as exc:
            messages = [m for msgs in exc.message_dict.values() for m in msgs]
            raise CommandError("; ".join(messages)) from exc
        self.stdout.write(
            f"Created API client {client.name!r} (scope {client.scope}). "
            "Store the key now: only its hash is kept."
        )
        self.stdout.write(key)
