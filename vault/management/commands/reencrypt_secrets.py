"""python manage.py reencrypt_secrets

Puts every stored secret of the sources under the current key
(``QUIVER_SOURCE_KEY``): the sources' header values, Quiver's client secrets at
authorization servers and people's upstream tokens. Run it after moving the old
key to ``QUIVER_SOURCE_OLD_KEYS``; once it reports nothing left unreadable, the
old key may be removed. Each row is rewritten under its own lock (a refresh
running meanwhile is not lost); a secret no configured key opens is left as it
is and counted. Safe to run again: a row already under the current key is
written with the same key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand
from django.db import models, transaction

from sources.models import Source
from sources.secrets import HeadersUnreadable, reencrypt_headers
from vault import crypto
from vault.models import Connection, SourceAuthorization

BATCH = 200


def _tokens(stored: str) -> str:
    return crypto.reencrypt(stored, crypto.TOKENS)


def _client_secrets(stored: str) -> str:
    return crypto.reencrypt(stored, crypto.CLIENT_SECRETS)


TABLES: tuple[tuple[type[models.Model], tuple[str, ...], Callable[[str], str]], ...] = (
    (Source, ("headers_encrypted",), reencrypt_headers),
    (SourceAuthorization, ("client_secret_encrypted",), _client_secrets),
    (Connection, ("access_encrypted", "refresh_encrypted"), _tokens),
)
UNREADABLE = (HeadersUnreadable, crypto.Unreadable)


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored source secret and upstream token with the current key."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        for model, fields, again in TABLES:
            done, unreadable = _reencrypt(model, fields, again)
            name = model._meta.verbose_name_plural
            self.stdout.write(f"{name}: {done} re-encrypted, {unreadable} unreadable")


def _reencrypt(
    model: type[models.Model], fields: tuple[str, ...], again: Callable[[str], str]
) -> tuple[int, int]:
    done = unreadable = 0
    ids = list(model._default_manager.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        with transaction.atomic():
            rows = model._default_manager.select_for_update().filter(
                pk__in=ids[start : start + BATCH]
            )
            for row in rows:
                try:
                    values = {f: again(getattr(row, f)) for f in fields}
                except UNREADABLE:
                    unreadable += 1
                    continue
                model._default_manager.filter(pk=row.pk).update(**values)
                done += 1
    return done, unreadable
