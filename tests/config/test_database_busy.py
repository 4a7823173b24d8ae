"""Load is never read as an outage. Postgres refuses a connection when none is
free (its max_connections, or a role's own limit as here: the same refusal,
without taking every connection of the server the other tests share); the
request that needed it is a 503 saying the database is busy, with a short
Retry-After, over REST, /mcp and the console alike, never "not reachable".
And the servers ``make run`` and ``make test`` start take a connection for
every thread and process of the plan (config.env.database_connections)."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest
from django.db import connection, connections
from django.test import Client
from rest_framework.test import APIClient

from config.devstack import connections_needed
from config.env import WebServer, database_connections, web_server
from sources.models import Source
from tests.factories import make_client_key, make_user

ROLE = f"quiver_one_connection_{os.getpid()}"


def elsewhere(work: Callable[[], Any]) -> Any:
    """``work()`` on a thread of its own: a new thread opens a new connection."""
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["value"] = work()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    return answer["value"]


@pytest.fixture
def no_free_connection(transactional_db: None, monkeypatch: Any) -> Iterator[None]:
    """From here on this process connects as a role allowed one connection,
    which is taken."""
    with connection.cursor() as cursor:
        cursor.execute(f'DROP ROLE IF EXISTS "{ROLE}"')  # a killed run's
        cursor.execute(f'CREATE ROLE "{ROLE}" LOGIN CONNECTION LIMIT 1')
    params = {**connection.get_connection_params(), "user": ROLE}
    held = psycopg.connect(**params)
    monkeypatch.setitem(connection.settings_dict, "USER", ROLE)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    try:
        yield
    finally:
        held.close()
        monkeypatch.undo()
        with connection.cursor() as cursor:
            cursor.execute(f'DROP ROLE "{ROLE}"')


def assert_busy(status: int, headers: Any, detail: str) -> None:
    assert status == 503
    assert headers["Retry-After"] == "2"
    assert detail.startswith("database: busy"), detail


@pytest.fixture
def source_and_key(transactional_db: None) -> tuple[int, str]:
    from catalog.services import ensure_default_catalog

    source = Source.objects.create(
        catalog=ensure_default_catalog(), name="busy", url="https://mcp.example.com/mcp"
    )
    return source.pk, make_client_key("ops-busy", "admin")


def patch_source(source_id: int, key: str) -> Any:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    bad = {"timeout_seconds": -5}
    return api.patch(f"/api/v1/sources/{source_id}", bad, format="json")


def test_a_source_patch_is_a_400_when_quiet_and_busy_when_no_connection_is_free(
    source_and_key, request
):
    source_id, key = source_and_key
    quiet = elsewhere(lambda: patch_source(source_id, key))
    assert quiet.status_code == 400, quiet.content
    request.getfixturevalue("no_free_connection")
    busy = elsewhere(lambda: patch_source(source_id, key))
    body = busy.json()
    assert_busy(busy.status_code, busy, body["detail"])
    assert (body["error"], body["service"]) == ("unavailable", "database")


def test_mcp_and_the_console_say_busy_too(source_and_key, request):
    from gateway.wsgi import with_mcp

    _, key = source_and_key
    person = Client()
    person.force_login(make_user("busy-curator", groups=("curator",)))
    request.getfixturevalue("no_free_connection")
    app = with_mcp(lambda environ, start: [])

    def mcp() -> httpx.Response:
        transport = httpx.WSGITransport(app=app)
        with httpx.Client(transport=transport, base_url="http://localhost") as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            headers = {
                "Authorization": f"Bearer {key}",
                "Accept": "application/json, text/event-stream",
                "Mcp-Protocol-Version": "2025-06-18",
            }
            return http.post("/mcp", json=body, headers=headers)

    answer = elsewhere(mcp)
    assert_busy(answer.status_code, answer.headers, answer.json()["detail"])
    page = elsewhere(lambda: person.get("/tools/", HTTP_ACCEPT="text/html"))
    assert (page.status_code, page["Retry-After"]) == (503, "2")
    assert b"database: busy" in page.content


def test_an_mcp_tool_whose_work_finds_no_free_connection_says_busy_and_ran_nothing(
    source_and_key, request
):
    """A handshake-era tool's Django work runs on a thread of its own."""
    from gateway import services
    from identity.models import ApiClient

    agent = ApiClient.objects.select_related("user").get(name="ops-busy").user
    request.getfixturevalue("no_free_connection")

    def search() -> str:
        try:
            services.search(agent, {"query": "weather"}, uuid.uuid4())
        except services.ToolFailure as exc:
            return str(exc)
        return "answered"

    said = elsewhere(search)
    assert said.startswith("database: busy") and "nothing was called" in said, said


def test_the_plan_counts_four_connections_a_web_thread_and_two_a_worker_process():
    plan = WebServer(workers=2, threads=12, timeout_s=60)
    assert database_connections(plan, worker_processes=5) == 2 * 12 * 4 + 5 * 2 + 20
    bigger = WebServer(workers=4, threads=24, timeout_s=60)
    assert database_connections(bigger, 5) > database_connections(plan, 5)


def test_the_test_server_takes_the_plan_s_connections(db):
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections")
        [(allowed,)] = cursor.fetchall()
    assert connections_needed() >= database_connections(web_server(), 5)
    assert int(allowed) >= connections_needed()
