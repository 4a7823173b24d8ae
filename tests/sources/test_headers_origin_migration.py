"""sources/migrations/0003: header values stored before the origin binding are
bound to their source's URL by the migration, so a URL changed around the services
afterwards finds them refused; unreadable ones are left as they were."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from catalog.services import ensure_default_catalog
from sources.models import Source
from sources.secrets import HeadersForAnotherOrigin, decrypt_headers, encrypt_headers

BEFORE = [("sources", "0002_stdio_kind")]
AFTER = [("sources", "0003_bind_headers_to_origin")]
URL = "http://10.0.0.5:8080/mcp"


def _migrate(targets: list[tuple[str, str]]) -> Any:
    """Migrate to ``targets``; the models as they were there."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _latest() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_the_migration_binds_stored_headers_to_their_origin(settings):
    catalog = ensure_default_catalog()
    # Rows written with the model of the time (later migrations add columns), and
    # the schema back at the latest afterwards, for the tests that follow.
    OldSource = _migrate(BEFORE).get_model("sources", "Source")
    try:
        readable = OldSource.objects.create(
            catalog_id=catalog.pk,
            name="old",
            url=URL,
            headers_encrypted=encrypt_headers({"Authorization": "Bearer t-1"}),
        )
        settings.QUIVER_SOURCE_KEY = "a-key-since-forgotten-0123456789"
        lost = encrypt_headers({"X-Key": "k"})
        settings.QUIVER_SOURCE_KEY = ""
        unreadable = OldSource.objects.create(
            catalog_id=catalog.pk, name="lost", url=URL, headers_encrypted=lost
        )
    finally:
        _migrate(AFTER)
        _migrate(_latest())

    readable = Source.objects.get(pk=readable.pk)
    assert decrypt_headers(readable) == {"Authorization": "Bearer t-1"}
    readable.url = "http://10.0.0.6:8080/mcp"  # another origin, around the services
    with pytest.raises(HeadersForAnotherOrigin):
        decrypt_headers(readable)
    assert Source.objects.get(pk=unreadable.pk).headers_encrypted == lost
