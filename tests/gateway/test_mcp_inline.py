"""Where /mcp's work runs (issue 32): a 2026-07-28 request is one exchange on
the request's own thread, its Django work done in place (no hop to the gateway's
loop and a worker thread); a handshake-era request keeps the gateway's loop and
its worker threads. Either way the call is the same call: the upstream reached
once, both audit rows, channel mcp. In process, through ``with_mcp`` as
gunicorn serves it."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from django.db import connection, connections

from audit.models import AuditEvent
from gateway import server, services
from tests.calls.conftest import link_source
from tests.factories import make_client_key
from tests.upstream import Upstream

MODERN = "2026-07-28"
FORECAST = "weather.get_forecast"


@pytest.fixture
def mcp(transactional_db: None, module_upstream: Upstream, monkeypatch) -> Any:
    """An agent's POST to /mcp, and the threads ``services.call`` ran on."""
    from gateway.wsgi import with_mcp

    # A handshake-era call runs on a worker thread, which closes its connection
    # when done: none is left open on the test database.
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    module_upstream.calls.clear()
    link_source(module_upstream)
    key = make_client_key("agent-inline", "agent")
    threads: list[threading.Thread] = []
    real_call = services.call

    def call(*args: Any) -> Any:
        threads.append(threading.current_thread())
        return real_call(*args)

    monkeypatch.setattr(services, "call", call)
    app = with_mcp(lambda environ, start: [])

    def post(version: str, name: str, arguments: dict[str, Any]) -> Any:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        headers = {
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {key}",
            "Mcp-Protocol-Version": version,
        }
        if version == MODERN:  # the envelope and the mirrored headers
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            headers |= {"Mcp-Method": "tools/call", "Mcp-Name": name}
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        return on_a_server_thread(app, body, headers, post.served)  # type: ignore[attr-defined]

    post.threads = threads  # type: ignore[attr-defined]
    post.served = []  # type: ignore[attr-defined]
    return post


def on_a_server_thread(
    app: Any, body: dict[str, Any], headers: dict[str, str], served: list[Any]
) -> Any:
    """The request answered on a thread of its own, as a gunicorn worker's thread
    answers it (never the test's thread, where a browser test's loop may run)."""
    answer: dict[str, Any] = {}

    def serve() -> None:
        try:
            transport = httpx.WSGITransport(app=app)
            with httpx.Client(transport=transport, base_url="http://localhost") as c:
                answer["response"] = c.post("/mcp", json=body, headers=headers)
        finally:
            connections.close_all()

    thread = threading.Thread(target=serve, name="server-thread")
    served.append(thread)
    thread.start()
    thread.join(60)
    return answer["response"]


def outcomes() -> list[str]:
    events = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    return [event.output["outcome"] for event in events]


def channels() -> set[str]:
    events = AuditEvent.objects.filter(event_type="tool_call")
    return {event.input["channel"] for event in events}


@pytest.mark.parametrize("version", [MODERN, "2025-06-18"])
def test_a_call_runs_once_with_both_audit_rows_in_either_era(
    mcp, module_upstream, version
):
    call = {"name": FORECAST, "arguments": {"city": "Lyon", "days": 1}}
    answer = mcp(version, "call_tool", call)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result.get("isError") is not True, result
    assert result["structuredContent"]["city"] == "Lyon"
    assert [reached.name for reached in module_upstream.calls] == ["get_forecast"]
    assert outcomes() == ["started", "ran"]
    assert channels() == {"mcp"}


def test_a_2026_07_28_call_is_worked_on_the_request_s_own_thread(mcp):
    answer = mcp(MODERN, FORECAST, {"city": "Nice"})
    assert answer.status_code == 200, answer.text
    assert mcp.threads == mcp.served
    assert outcomes() == ["started", "ran"]


def test_a_handshake_era_call_is_worked_off_the_request_s_thread(mcp):
    answer = mcp("2025-06-18", FORECAST, {"city": "Nice"})
    assert answer.status_code == 200, answer.text
    [worker] = mcp.threads
    assert worker not in mcp.served


def test_a_refusal_on_the_request_s_thread_is_recorded_and_named(mcp, module_upstream):
    answer = mcp(MODERN, "call_tool", {"name": FORECAST, "arguments": {"days": 3}})
    result = answer.json()["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["status"] == "refused"
    assert "city" in result["content"][0]["text"]
    assert module_upstream.calls == []
    assert outcomes() == ["refused"]


def test_the_sdk_checks_headers_against_the_schemas_tools_list_shows():
    """The SDK's Mcp-Param-* check reads a tool's input schema here instead of
    running the tools/list handler on every call: the same schemas, and none
    for a catalog tool called by its own name (that listing never shows it)."""
    for tool in server.TOOLS:
        assert server.tool_input_schema(tool.name) == tool.input_schema
    assert server.tool_input_schema(FORECAST) is None
