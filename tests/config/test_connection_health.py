"""A persistent connection's health is checked without a round trip when the
server has said nothing, and a connection the server closed is found unusable."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


def last_query_of(pid: int) -> str:
    """What the server last ran for ``pid``, seen from another connection."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    with psycopg.connect(**params, autocommit=True) as other:
        row = other.execute(
            "SELECT query FROM pg_stat_activity WHERE pid = %s", [pid]
        ).fetchone()
    return row[0] if row else ""


def test_an_idle_open_connection_is_usable_without_asking_the_server():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 42")
        pid = connection.connection.info.backend_pid
    assert connection.is_usable()
    assert last_query_of(pid) == "SELECT 42"


def test_a_connection_the_server_closed_is_not_usable():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while connection.is_usable() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not connection.is_usable()
    connection.close()
    with connection.cursor() as cursor:  # and the next use reconnects
        cursor.execute("SELECT 1")
