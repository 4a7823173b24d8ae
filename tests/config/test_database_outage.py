"""Postgres down: a JSON 503 naming the database at once, and recovery without a
restart when it is back.

The session's Postgres is shared by every test, so it is never stopped. Instead a
real gunicorn server reaches it through a TCP proxy (tests/outages.py); cutting
the proxy breaks the server's open connection and refuses new ones, which is what
a client sees of a stopped database, and restoring it on the same port is the
database coming back. The server is a separate process with Django's ordinary
request cycle (persistent connections, health checks), which the in-process test
client would bypass.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.test import Client

from tests.conftest import worker_env
from tests.factories import make_client_key, make_tool, make_user
from tests.outages import TcpProxy
from tests.outages import web_behind_proxy as behind_proxy

pytestmark = [pytest.mark.integration]


@pytest.fixture
def web_behind_proxy(transactional_db: None) -> Iterator[tuple[Any, TcpProxy]]:
    with (
        behind_proxy(worker_env(), "db-outage") as (url, proxy),
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client, proxy


def test_the_api_answers_503_json_naming_the_database_and_recovers(web_behind_proxy):
    http, proxy = web_behind_proxy
    headers = {"Authorization": f"Bearer {make_client_key('agent', 'agent')}"}
    make_tool(name="get_weather")
    assert http.get("/api/v1/tools/", headers=headers).status_code == 200
    proxy.cut()
    started = time.monotonic()
    response = http.get("/api/v1/tools/", headers=headers)
    assert time.monotonic() - started < 10
    assert response.status_code == 503
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["error"] == "unavailable"
    assert response.json()["detail"].startswith("database: ")
    assert response.json()["retryable"] is True  # nothing was done: send it again
    assert response.headers["Retry-After"]
    proxy.restore()
    again = http.get("/api/v1/tools/", headers=headers)
    assert again.status_code == 200
    assert [tool["name"] for tool in again.json()["results"]] == ["get_weather"]


def test_a_write_with_the_database_down_answers_503_json(web_behind_proxy):
    http, proxy = web_behind_proxy
    headers = {"Authorization": f"Bearer {make_client_key('curator', 'curator')}"}
    assert http.get("/api/v1/tools/", headers=headers).status_code == 200
    proxy.cut()
    tool = {"catalog": "default", "name": "get_weather", "description": "Weather."}
    response = http.post("/api/v1/tools/", json=tool, headers=headers)
    assert response.status_code == 503
    assert response.json()["detail"].startswith("database: ")


def test_a_console_page_answers_a_503_page_and_recovers(web_behind_proxy):
    http, proxy = web_behind_proxy
    session = Client()
    session.force_login(make_user("mo"))
    http.cookies.set("sessionid", session.cookies["sessionid"].value)
    assert http.get("/tools/").status_code == 200
    proxy.cut()
    response = http.get("/tools/", headers={"Accept": "text/html"})
    assert response.status_code == 503
    assert "text/html" in response.headers["Content-Type"]
    assert "database: not reachable" in response.text
    proxy.restore()
    assert http.get("/tools/").status_code == 200


def test_mcp_answers_a_json_503_naming_the_database_and_recovers(web_behind_proxy):
    http, proxy = web_behind_proxy
    headers = {
        "Authorization": f"Bearer {make_client_key('agent', 'agent')}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert http.post("/mcp", json=ping, headers=headers).status_code == 200
    proxy.cut()
    response = http.post("/mcp", json=ping, headers=headers)
    assert response.status_code == 503
    assert response.json()["service"] == "database"
    assert response.json()["detail"].startswith("database: ")
    assert response.json()["retryable"] is True
    assert response.headers["Retry-After"] == "5"
    proxy.restore()
    assert http.post("/mcp", json=ping, headers=headers).status_code == 200
