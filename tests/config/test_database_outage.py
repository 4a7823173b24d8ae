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
from django.conf import settings
from django.test import Client

from tests.conftest import worker_env
from tests.factories import make_client_key, make_tool, make_user
from tests.outages import TcpProxy, start_web, stop_process

pytestmark = [pytest.mark.integration]


@pytest.fixture
def web_behind_proxy(transactional_db: None) -> Iterator[tuple[Any, TcpProxy]]:
    db = settings.DATABASES["default"]
    proxy = TcpProxy((str(db["HOST"]), db["PORT"]))
    proxy.restore()
    env = worker_env()
    env["DATABASE_URL"] = (
        f"postgresql://{db['USER']}:{db['PASSWORD']}@127.0.0.1:{proxy.port}/{db['NAME']}"
    )
    web, url = start_web(env, "db-outage")
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client, proxy
    finally:
        stop_process(web)
        proxy.cut()


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
    proxy.restore()
    assert http.post("/mcp", json=ping, headers=headers).status_code == 200
