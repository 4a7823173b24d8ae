"""No span holds what a caller sent, whatever part of a request holds it: a tool
or audit search's text, a path, a header (User-Agent, Referer, X-Forwarded-For,
a cookie), the Host, the method, a called tool's name; and over ``/mcp`` the
JSON-RPC id, method and ``_meta``, the protocol version header. Every span the
OpenTelemetry SDK exports in this process (its in-memory exporter, behind
Quiver's own redaction) is searched for the text."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from rest_framework.test import APIClient

from tests.factories import make_client_key
from tests.gateway.test_mcp_inline import on_a_server_thread
from tests.telemetry.test_traces import texts_of

SECRET = "timbuktu4c9e1f"
SENT: dict[str, Any] = {
    "HTTP_USER_AGENT": f"agent/{SECRET}",
    "HTTP_REFERER": f"https://{SECRET}.example/",
    "HTTP_X_FORWARDED_FOR": f"{SECRET}, 203.0.113.9",
    "HTTP_COOKIE": f"vendor={SECRET}",
    "HTTP_ACCEPT_LANGUAGE": SECRET,
    "HTTP_X_REQUEST_ID": SECRET,
}


def over_rest(key: str) -> None:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    for path in (
        f"/api/v1/tools/?q={SECRET}",
        f"/api/v1/audit/?q={SECRET}&tool={SECRET}",
        f"/api/v1/tools/{SECRET}/",
        f"/tools/?q={SECRET}",
    ):
        api.get(path, **SENT, RAW_URI=path)  # the whole target, as gunicorn gives it
    api.get("/api/v1/tools/", **{**SENT, "HTTP_HOST": f"{SECRET}.example"})
    api.generic(SECRET.upper(), "/api/v1/tools/", **SENT)
    call = {"name": f"weather.{SECRET}", "arguments": {}}
    api.post("/api/v1/tool-calls/execute", call, format="json", **SENT)
    api.post("/api/v1/select", {"query": SECRET}, format="json", **SENT)


def over_mcp(key: str) -> None:
    from gateway.wsgi import with_mcp

    mcp = with_mcp(lambda environ, start: [])  # built with tracing on

    def app(environ: dict[str, Any], start: Any) -> Any:
        raw = f"/mcp?q={SECRET}"  # a query, in the target as gunicorn gives it
        return mcp({**environ, "RAW_URI": raw, "QUERY_STRING": f"q={SECRET}"}, start)

    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {key}",
        "Mcp-Protocol-Version": "2025-06-18",
        "User-Agent": f"agent/{SECRET}",
    }
    meta = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "x": SECRET}
    requests = [
        ("tools/call", {"name": f"weather.{SECRET}", "arguments": {}, "_meta": meta}),
        ("tools/call", {"name": "search_tools", "arguments": {"query": SECRET}}),
        (f"{SECRET}/list", {}),
    ]
    for method, params in requests:
        body = {"jsonrpc": "2.0", "id": SECRET, "method": method, "params": params}
        on_a_server_thread(app, body, headers, [])
    versioned = headers | {"Mcp-Protocol-Version": SECRET}
    on_a_server_thread(
        app, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, versioned, []
    )

    def odd_method(environ: dict[str, Any], start: Any) -> Any:
        return app({**environ, "REQUEST_METHOD": SECRET.upper()}, start)

    on_a_server_thread(odd_method, {}, headers, [])


def leaks(finished: list[Any]) -> list[tuple[str, str]]:
    found = []
    for span in finished:
        texts = texts_of(span) + [str(span.context.trace_state)]
        found += [(span.name, text) for text in texts if SECRET in text.lower()]
    return found


def test_no_span_holds_what_a_caller_sent_anywhere_in_a_request(spans, monkeypatch):
    # /mcp's work runs on threads of this process, each closing its connection.
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    key = make_client_key("ops-traced", "admin")
    spans.clear()
    over_rest(key)
    over_mcp(key)
    finished = list(spans.get_finished_spans())
    names = {span.name for span in finished}
    assert {"POST api/v1/select", "POST /mcp", "quiver.select"} <= names, names
    assert leaks(finished) == [], json.dumps(leaks(finished), indent=1)
