"""sources/migrations/0003: header values stored before the origin binding are
bound to their source's URL by the migration, so a URL changed around the services
afterwards finds them refused; unreadable ones are left as they were."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from catalog.services import ensure_default_catalog
from sources.models import Source
from sources.secrets import HeadersForAnotherOrigin, decrypt_headers, encrypt_headers

BEFORE = [("sources", "0002_stdio_kind")]
AFTER = [("sources", "0003_bind_headers_to_origin")]
URL = "http://10.0.0.5:8080/mcp"


def _migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_the_migration_binds_stored_headers_to_their_origin(settings):
    catalog = ensure_default_catalog()
    _migrate(BEFORE)
    try:
        readable = Source.objects.create(
            catalog=catalog,
            name="old",
            url=URL,
            headers_encrypted=encrypt_headers({"Authorization": "Bearer t-1"}),
        )
        settings.QUIVER_SOURCE_KEY = "a-key-since-forgotten-0123456789"
        lost = encrypt_headers({"X-Key": "k"})
        settings.QUIVER_SOURCE_KEY = ""
        unreadable = Source.objects.create(
            catalog=catalog, name="lost", url=URL, headers_encrypted=lost
        )
    finally:
        _migrate(AFTER)

    readable.refresh_from_db()
    assert decrypt_headers(readable) == {"Authorization": "Bearer t-1"}
    readable.url = "http://10.0.0.6:8080/mcp"  # another origin, around the services
    with pytest.raises(HeadersForAnotherOrigin):
        decrypt_headers(readable)
    unreadable.refresh_from_db()
    assert unreadable.headers_encrypted == lost
