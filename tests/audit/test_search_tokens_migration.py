"""audit/migrations/0010: events written before it get their search tokens from the
migration itself, and the filters find them afterwards."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from audit.filters import filter_events
from audit.models import AuditEvent

BEFORE = [("audit", "0009_rollup")]
AFTER = [("audit", "0010_search_tokens_column")]


def _migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _latest() -> list[tuple[str, str]]:
    """Every app's last migration: the tests that follow in this process need
    the tables later migrations make (the checkpoint store's among them)."""
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def _insert_old_event() -> int:
    """A selection written with the table as 0009 left it (no tokens column)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_auditevent (event_type, actor_name, request_id, "
            "catalog_slug, catalog_version, summary, input, output, created, "
            "prev_hash, hash_version, key_id) VALUES ('selection', 'agent-7', %s, "
            "'default', 1, 'refund please -> 1 pick', %s, %s, now(), '', 2, '') "
            "RETURNING id",
            [
                str(uuid.uuid4()),
                json.dumps({"request": {"query": "refund please"}}),
                json.dumps({"tools": [{"name": "get_weather"}], "excluded": []}),
            ],
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_events_written_before_it_their_search_tokens():
    _migrate(BEFORE)
    try:
        event_id = _insert_old_event()
    finally:
        _migrate(AFTER)
        _migrate(_latest())
    event = AuditEvent.objects.get(pk=event_id)
    assert {"p:get_weather", "a:AGE", "t:REF"} <= set(event.search_tokens)
    found = filter_events(AuditEvent.objects.all(), {"tool": "get_weather"})
    assert [e.pk for e in found] == [event_id]
    assert [e.pk for e in filter_events(AuditEvent.objects.all(), {"q": "REFUND"})] == [
        event_id
    ]
