"""Nothing of a caller's trace context reaches an upstream. An agent sends W3C
``traceparent``, ``tracestate`` and 7 KB of ``baggage``, other vendors' trace
headers, and the same and more in an MCP request's ``_meta``, through every path
a call takes (REST execute, an approved call's run, ``/mcp`` in both protocol
eras, ``call_tool`` and a tool called by its own name) to a real upstream MCP
server (tests/upstream.py) of either era, which records the ``_meta`` and the
headers each ``tools/call`` brings. Only a ``traceparent`` may arrive, naming a
span Quiver made under the caller's trace (tracing on), never the caller's own
span."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from opentelemetry import baggage, trace
from rest_framework.test import APIClient

from calls.models import Approval
from telemetry.propagation import OwnSpanOnly
from tests.calls.conftest import link_source
from tests.factories import make_client_key
from tests.gateway.test_mcp_inline import on_a_server_thread
from tests.upstream import Upstream, UpstreamCall, running_upstream

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
MARK = "caller-only-d41c"
BAGGAGE = ",".join(f"k{n}={MARK}-{'v' * 60}" for n in range(90))
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
HEADERS = {
    "traceparent": TRACEPARENT,
    "tracestate": f"vendor={MARK},congo=t61rcWkgMzE",
    "baggage": BAGGAGE,
    "b3": f"{CALLER_TRACE}-{CALLER_SPAN}-1",
    "X-B3-TraceId": CALLER_TRACE,
    "X-B3-SpanId": CALLER_SPAN,
    "uber-trace-id": f"{CALLER_TRACE}:{CALLER_SPAN}:0:1",
    "X-Cloud-Trace-Context": f"{CALLER_TRACE}/1;o=1",
    "X-Amzn-Trace-Id": f"Root=1-5759e988-{MARK}",
    "sentry-trace": f"{CALLER_TRACE}-{CALLER_SPAN}-1",
    "X-Datadog-Trace-Id": "1234567890123",
    "X-Vendor-Context": MARK,
}
META = {
    "traceparent": TRACEPARENT,
    "tracestate": f"vendor={MARK}",
    "baggage": BAGGAGE,
    "progressToken": MARK,
    "example.com/vendor": MARK,
    "sentry-trace": f"{CALLER_TRACE}-{CALLER_SPAN}-1",
}
MODERN = "2026-07-28"
ENVELOPE = "io.modelcontextprotocol/"


@pytest.fixture(scope="module", params=["2026-07-28 upstream", "handshake upstream"])
def either_era(request: Any) -> Iterator[Upstream]:
    upstream = Upstream(handshake_only=request.param == "handshake upstream")
    with running_upstream(upstream) as running:
        yield running


@pytest.fixture
def agent(either_era: Upstream, monkeypatch: Any) -> Any:
    """The caller: REST and ``/mcp`` (in process, as gunicorn serves it) with one
    agent key, against a source of ``either_era``."""
    from gateway.wsgi import with_mcp

    # /mcp's work runs on threads of this process, each closing its connection.
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    either_era.calls.clear()
    link_source(either_era)
    key = make_client_key("traced-agent", "agent")
    rest = APIClient()
    rest.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return rest, with_mcp(lambda environ, start: []), key


def every_path(agent: Any) -> None:
    """One call by each path, every one carrying the caller's whole context."""
    rest, mcp, key = agent
    as_meta = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in HEADERS.items()}
    execute = "/api/v1/tool-calls/execute"
    forecast = {"name": "weather.get_forecast", "arguments": {"city": "Oslo"}}
    ran = rest.post(execute, forecast, format="json", **as_meta)
    assert ran.json()["outcome"] == "ran", ran.content
    delete = {"name": "weather.delete_file", "arguments": {"path": "/srv/a.log"}}
    pending = rest.post(execute, delete, format="json", **as_meta).json()
    approval = pending["approval_id"]
    Approval.objects.filter(pk=approval).update(
        status="approved", decided=timezone.now()
    )
    approved = {**delete, "approval_id": approval}
    ran = rest.post(execute, approved, format="json", **as_meta)
    assert ran.json()["outcome"] == "ran", ran.content
    for version in (MODERN, "2025-06-18"):
        mcp_call(mcp, key, version, "call_tool", forecast)
        mcp_call(mcp, key, version, "weather.get_forecast", {"city": "Rome"})


def mcp_call(
    mcp: Any, key: str, version: str, name: str, arguments: dict[str, Any]
) -> None:
    meta: dict[str, Any] = dict(META)
    headers = {
        **HEADERS,
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {key}",
        "Mcp-Protocol-Version": version,
    }
    if version == MODERN:
        meta[f"{ENVELOPE}protocolVersion"] = MODERN
        meta[f"{ENVELOPE}clientCapabilities"] = {}
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": name}
    params = {"name": name, "arguments": arguments, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    answer = on_a_server_thread(mcp, body, headers, [])
    result = answer.json()["result"]
    assert result.get("isError") is not True, result


def what_arrived(upstream: Upstream) -> list[UpstreamCall]:
    calls = list(upstream.calls)
    assert [call.name for call in calls] == [
        "get_forecast",
        "delete_file",
        *["get_forecast"] * 4,
    ]
    sent = {name.lower() for name in HEADERS} | set(META)
    for call in calls:
        # The upstream's era: the 2026-07-28 envelope, or the handshake's none.
        assert any(k.startswith(ENVELOPE) for k in call.meta) != upstream.handshake_only
        assert not sent & set(call.headers), call.headers
        own = {k for k in call.meta if not k.startswith(ENVELOPE)}
        assert own <= {"traceparent"}, call.meta
        everything = json.dumps([call.meta, call.headers])
        assert MARK not in everything
        assert CALLER_SPAN not in everything
    return calls


def carried_span(call: UpstreamCall) -> tuple[str, int]:
    _version, trace_id, span_id, _flags = call.meta["traceparent"].split("-")
    return trace_id, int(span_id, 16)


def test_only_a_span_of_quiver_s_own_reaches_the_upstream(spans, agent, either_era):
    every_path(agent)
    calls = what_arrived(either_era)
    senders = {
        span.context.span_id: span.name
        for span in spans.get_finished_spans()
        if span.name.startswith("MCP send tools/call")
    }
    for call in calls:
        trace_id, span_id = carried_span(call)
        assert trace_id == CALLER_TRACE  # the caller's trace goes on
        assert senders[span_id] == f"MCP send tools/call {call.name}"


def test_with_tracing_off_no_caller_context_reaches_the_upstream(
    transactional_db, agent, either_era
):
    every_path(agent)
    for call in what_arrived(either_era):
        if "traceparent" in call.meta:  # a span of this process's SDK, if any
            assert carried_span(call)[1] != int(CALLER_SPAN, 16)


def test_a_caller_s_context_is_read_for_its_trace_alone_and_never_passed_on():
    """With tracing off (OpenTelemetry's no-op tracer), the span current during a
    call is the caller's own, as it came: nothing goes out."""
    sent = {k.lower(): v for k, v in HEADERS.items()}
    context = OwnSpanOnly().extract(sent)
    parent = trace.get_current_span(context).get_span_context()
    assert f"{parent.trace_id:032x}" == CALLER_TRACE
    assert not parent.trace_state and baggage.get_all(context) == {}
    carrier: dict[str, str] = {}
    with trace.NoOpTracer().start_as_current_span("call", context=context):
        OwnSpanOnly().inject(carrier)
    assert carrier == {}
