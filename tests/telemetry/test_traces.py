"""One trace from a model's request to the upstream's work, with an in-memory
span exporter (the OTel SDK's own), Quiver's tracing started as OTEL_* would
start it, and a real upstream MCP server (tests/upstream.py, in this process:
its SDK spans land in the same exporter).

The agent's turn is a span of the test's own, not current while Quiver works:
its W3C ``traceparent`` goes in the HTTP headers of /select and of the call, as
an instrumented agent sends it. The upstream reads ``_meta.traceparent`` on the
tools/call and continues the same trace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import mcp_types as types
import pytest
from django.db import connection
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from opentelemetry.propagate import inject
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from rest_framework.test import APIClient

from telemetry import tracing
from tests.calls.conftest import link_source
from tests.factories import make_client_key
from tests.upstream import Upstream, running_upstream, upstream_tool

SECRET = "Timbuktu-4c9e1f"  # in arguments, in a query and in upstream errors


class EchoingUpstream(Upstream):
    """The test upstream plus ``explode``, whose JSON-RPC error quotes its
    arguments (as servers' validation errors often do)."""

    async def _answer(
        self, name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        if name == "explode":
            raise MCPError(code=-32602, message=f"bad arguments: {arguments}")
        return await super()._answer(name, arguments)


@pytest.fixture(scope="module")
def module_upstream() -> Iterator[Upstream]:
    upstream = EchoingUpstream()
    upstream.tools["explode"] = upstream_tool(
        "explode",
        "Fails quoting its input.",
        {"text": {"type": "string"}},
        read_only=True,
    )
    with running_upstream(upstream) as running:
        yield running


@pytest.fixture
def agent(spans: InMemorySpanExporter, module_upstream: Upstream) -> APIClient:
    module_upstream.calls.clear()
    link_source(module_upstream)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_client_key('agent', 'agent')}")
    return api


def traced_turn(
    spans: InMemorySpanExporter, api: APIClient, work: Any
) -> tuple[Any, Any]:
    """Run ``work(api, headers)`` as one agent turn; its span and what it gave
    (the spans of the setup before it are forgotten)."""
    spans.clear()
    turn = trace.get_tracer("agent").start_span("agent turn")
    headers: dict[str, str] = {}
    inject(headers, context=trace.set_span_in_context(turn))
    try:
        answer = work(api, {"HTTP_TRACEPARENT": headers["traceparent"]})
    finally:
        turn.end()
    return turn, answer


def select_then_call(api: APIClient, headers: dict[str, Any]) -> tuple[Any, Any]:
    chosen = api.post(
        "/api/v1/select",
        {"query": "weather forecast for a city"},
        format="json",
        **headers,
    )
    assert chosen.status_code == 200, chosen.content
    assert "weather.get_forecast" in [t["name"] for t in chosen.json()["tools"]]
    call = {
        "name": "weather.get_forecast",
        "arguments": {"city": SECRET},
        "selection_id": chosen.json()["selection_id"],
    }
    ran = api.post("/api/v1/tool-calls/execute", call, format="json", **headers)
    assert ran.status_code == 200 and ran.json()["outcome"] == "ran", ran.content
    return chosen.json(), ran.json()


def named(finished: list[Any], name: str) -> Any:
    [found] = [span for span in finished if span.name == name]
    return found


def ancestors(span: Any, by_id: dict[int, Any]) -> list[str]:
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


def test_one_trace_runs_from_the_agent_through_select_and_the_call_to_the_upstream(
    agent, spans, module_upstream
):
    turn, (chosen, ran) = traced_turn(spans, agent, select_then_call)
    trace_id = turn.get_span_context().trace_id
    finished = list(spans.get_finished_spans())
    # The upstream's side of the tools/list Quiver sends on connecting starts a
    # trace of its own (the SDK's server reads no _meta on a list); all the rest,
    # Quiver's spans and the upstream's tools/call, is the agent's one trace.
    strays = {s.name for s in finished if s.context.trace_id != trace_id}
    assert strays <= {"tools/list"}
    finished = [s for s in finished if s.context.trace_id == trace_id]
    by_id = {span.context.span_id: span for span in finished}
    select = named(finished, "quiver.select")
    assert select.attributes["quiver.selection_id"] == chosen["selection_id"]
    assert ancestors(select, by_id) == ["POST api/v1/select", "agent turn"]
    for stage in ("snapshot", "ranking", "definitions", "audit_write"):
        assert ancestors(named(finished, f"quiver.select.{stage}"), by_id)[0] == (
            "quiver.select"
        )
    for stage in ("policy", "scoring"):
        assert ancestors(named(finished, f"quiver.select.{stage}"), by_id)[:2] == [
            "quiver.select.ranking",
            "quiver.select",
        ]
    call = named(finished, "quiver.call")
    assert call.attributes["quiver.call_id"] == ran["call_id"]
    assert call.attributes["quiver.outcome"] == "ran"
    assert call.attributes["quiver.selection_id"] == chosen["selection_id"]
    assert ancestors(call, by_id) == ["POST api/v1/tool-calls/execute", "agent turn"]
    for step in ("access", "validation", "upstream"):
        assert ancestors(named(finished, f"quiver.call.{step}"), by_id)[0] == (
            "quiver.call"
        )
    # The SDK's client span sends the call; the upstream's server span continues
    # it from _meta.traceparent (named by its method: the tool is what was asked).
    sent = named(finished, "MCP send tools/call get_forecast")
    assert ancestors(sent, by_id)[:2] == ["quiver.call.upstream", "quiver.call"]
    served = named(finished, "tools/call")
    assert served.parent.span_id == sent.context.span_id
    [upstream_call] = module_upstream.calls_to("get_forecast")
    version, carried_trace, parent, _flags = upstream_call.meta["traceparent"].split(
        "-"
    )
    assert int(carried_trace, 16) == trace_id
    assert int(parent, 16) == sent.context.span_id


def test_spans_follow_the_http_db_and_rpc_conventions(agent, spans):
    traced_turn(spans, agent, select_then_call)
    finished = list(spans.get_finished_spans())
    server = named(finished, "POST api/v1/select")
    assert server.kind == trace.SpanKind.SERVER
    assert server.attributes["http.request.method"] == "POST"
    assert server.attributes["http.route"] == "api/v1/select"
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["quiver.request_id"]
    by_id = {span.context.span_id: span for span in finished}
    queries = [
        s for s in finished if s.attributes.get("db.system.name") == "postgresql"
    ]
    assert queries and all(s.kind == trace.SpanKind.CLIENT for s in queries)
    assert all(s.attributes["db.query.text"] for s in queries)
    # The selection's reads and the call's audit row, each inside its span.
    assert [s for s in queries if "quiver.select" in ancestors(s, by_id)]
    assert [
        s
        for s in queries
        if "quiver.call" in ancestors(s, by_id)
        and s.attributes["db.query.text"].startswith("INSERT")
    ]
    upstream = named(finished, "quiver.call.upstream")
    assert upstream.attributes["rpc.system"] == "mcp"
    assert upstream.attributes["rpc.method"] == "tools/call"
    assert upstream.attributes["server.address"] == "127.0.0.1"
    assert upstream.attributes["gen_ai.tool.name"] == "get_forecast"


def send_everything(api: APIClient, headers: dict[str, Any]) -> None:
    """A call with the secret, one refused for it (its validation error quotes
    it), one the upstream fails quoting it, and a query holding it."""
    api.post(
        "/api/v1/select", {"query": f"weather in {SECRET}"}, format="json", **headers
    )
    calls = [
        {"name": "weather.get_forecast", "arguments": {"city": SECRET}},
        {"name": "weather.get_forecast", "arguments": {"city": "Oslo", "days": SECRET}},
        {"name": "weather.explode", "arguments": {"text": SECRET}},
    ]
    for call in calls:
        answer = api.post("/api/v1/tool-calls/execute", call, format="json", **headers)
        assert answer.status_code in (200, 400), answer.content


def texts_of(span: Any) -> list[str]:
    """Everything a span carries that could hold text."""
    found = [span.name, span.status.description or ""]
    found += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
    for event in span.events:
        found.append(event.name)
        found += [f"{k}={v}" for k, v in (event.attributes or {}).items()]
    for link in span.links:
        found += [f"{k}={v}" for k, v in (link.attributes or {}).items()]
    return found


def test_no_span_holds_a_value_the_caller_sent(agent, spans, module_upstream):
    traced_turn(spans, agent, send_everything)
    assert [c.arguments for c in module_upstream.calls_to("explode")]  # it ran
    finished = list(spans.get_finished_spans())
    assert len(finished) > 20
    leaks = [
        (span.name, text)
        for span in finished
        for text in texts_of(span)
        if SECRET in text
    ]
    assert leaks == []
    # The upstream's error is still visible as an error, by its type.
    failed = [s for s in finished if s.name == "MCP send tools/call explode"]
    assert failed and failed[0].status.status_code == trace.StatusCode.ERROR


def test_tracing_is_off_without_otel_variables():
    assert not tracing.enabled_by({})
    assert not tracing.enabled_by({"OTEL_SERVICE_NAME": "quiver"})
    assert tracing.enabled_by({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert tracing.enabled_by({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318"})
    assert tracing.enabled_by({"OTEL_TRACES_EXPORTER": "console"})
    assert not tracing.enabled_by({"OTEL_TRACES_EXPORTER": "none"})
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}
    assert not tracing.enabled_by({**endpoint, "OTEL_SDK_DISABLED": "true"})
    assert not tracing.enabled_by({**endpoint, "OTEL_TRACES_EXPORTER": "none"})


def test_an_exporter_quiver_cannot_run_stops_start_up_naming_the_variable():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="OTEL_TRACES_EXPORTER"):
        tracing.exporters({"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(ImproperlyConfigured, match="OTEL_EXPORTER_OTLP_PROTOCOL"):
        tracing.exporters({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    [otlp] = tracing.exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert type(otlp).__name__ == "OTLPSpanExporter"


def test_a_search_over_mcp_runs_in_the_agent_s_trace(
    spans, module_upstream, monkeypatch
):
    """``/mcp`` is served beside Django (gateway.wsgi): its request span is made
    there, and the MCP SDK's server span and Quiver's selection run under it."""
    from gateway.wsgi import with_mcp

    # The MCP work runs on threads of this process: each closes its connection
    # when done, so none is left open on the test database.
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    link_source(module_upstream)
    key = make_client_key("mcp-agent", "agent")
    app = with_mcp(lambda environ, start: [])  # built with tracing on, as at start
    turn = trace.get_tracer("agent").start_span("agent turn")
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {key}",
        "Mcp-Protocol-Version": "2025-06-18",
    }
    inject(headers, context=trace.set_span_in_context(turn))
    search = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": "weather"}},
    }
    spans.clear()
    transport = httpx.WSGITransport(app=app)
    with httpx.Client(transport=transport, base_url="http://localhost") as http:
        answer = http.post("/mcp", json=search, headers=headers)
    turn.end()
    assert answer.status_code == 200, answer.text
    selection_id = answer.json()["result"]["structuredContent"]["selection_id"]
    finished = list(spans.get_finished_spans())
    by_id = {span.context.span_id: span for span in finished}
    select = named(finished, "quiver.select")
    assert select.attributes["quiver.selection_id"] == selection_id
    assert select.attributes["quiver.channel"] == "mcp"
    assert ancestors(select, by_id) == [
        "tools/call",
        "POST /mcp",
        "agent turn",
    ]
    assert named(finished, "POST /mcp").attributes["http.route"] == "/mcp"
