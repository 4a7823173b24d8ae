"""The app's database role may only INSERT, SELECT and seal audit rows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from audit.services import verify_chain

# Roles belong to the whole Postgres cluster, which parallel test processes share.
ROLE = f"quiver_app_test{os.environ.get('PYTEST_XDIST_WORKER', '')}"


@pytest.fixture
def as_app(transactional_db, monkeypatch) -> Iterator[psycopg.Connection]:
    monkeypatch.setenv("QUIVER_APP_DB_PASSWORD", "app-secret")
    call_command("audit_app_role", ROLE)
    db: dict[str, Any] = settings.DATABASES["default"]
    conn = psycopg.connect(
        dbname=db["NAME"],
        user=ROLE,
        password="app-secret",
        host=db["HOST"],
        port=db["PORT"] or None,
        autocommit=True,
    )
    try:
        yield conn
    finally:
        conn.close()
        with connection.cursor() as cursor:
            cursor.execute(f"REASSIGN OWNED BY {ROLE} TO CURRENT_USER")
            cursor.execute(f"DROP OWNED BY {ROLE}")
            cursor.execute(f"DROP ROLE {ROLE}")


INSERT = """
INSERT INTO audit_auditevent (event_type, actor_name, request_id, catalog_slug,
  catalog_version, summary, input, output, created, prev_hash, hash_version, key_id)
VALUES ('selection', 'app', gen_random_uuid(), 'default', 1, 'by the app role',
  '{}', '{}', now(), '', 2, '') RETURNING id
"""


def test_the_app_role_may_build_the_run_time_hnsw_indexes(as_app):
    as_app.execute(
        "CREATE INDEX IF NOT EXISTS app_role_probe ON catalog_toolembedding (id)"
    )
    as_app.execute("DROP INDEX app_role_probe")


def test_the_app_role_appends_and_reads_audit_rows(as_app):
    row_id = as_app.execute(INSERT).fetchone()[0]
    assert as_app.execute(
        "SELECT summary FROM audit_auditevent WHERE id = %s", [row_id]
    ).fetchone() == ("by the app role",)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_auditevent SET summary = 'forged'",
        "DELETE FROM audit_auditevent",
        "TRUNCATE audit_auditevent",
        "ALTER TABLE audit_auditevent DISABLE TRIGGER USER",
    ],
)
def test_the_app_role_cannot_change_or_remove_audit_rows(as_app, statement):
    as_app.execute(INSERT)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        as_app.execute(statement)


def test_the_app_role_can_seal_and_nothing_more(as_app, settings):
    as_app.execute(INSERT)
    with as_app.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_auditevent SET seq = 1, hash = %s WHERE seq IS NULL",
            ["a" * 64],
        )
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            cursor.execute("UPDATE audit_auditevent SET seq = 2, hash = %s", ["b" * 64])
    assert not verify_chain(seal=False).ok, "a hash made without the key is caught"


def test_the_app_role_uses_the_other_tables_as_before(as_app):
    count = as_app.execute("SELECT count(*) FROM catalog_catalog").fetchone()[0]
    assert count >= 1


LINE = """
INSERT INTO audit_checkpoint_line (line, sig, prev_sig, created)
VALUES ('{}', %s, %s, now())
"""


def test_the_app_role_appends_and_reads_checkpoint_lines(as_app):
    as_app.execute(LINE, ["s1", ""])
    assert as_app.execute("SELECT sig FROM audit_checkpoint_line").fetchall() == [
        ("s1",)
    ]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_checkpoint_line SET line = 'forged'",
        "DELETE FROM audit_checkpoint_line",
        "TRUNCATE audit_checkpoint_line",
        "ALTER TABLE audit_checkpoint_line DISABLE TRIGGER USER",
    ],
)
def test_the_app_role_cannot_change_or_remove_checkpoint_lines(as_app, statement):
    as_app.execute(LINE, ["s1", ""])
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        as_app.execute(statement)
