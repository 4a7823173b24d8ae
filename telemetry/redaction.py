"""What of a span leaves the process: Quiver's names, ids, counts and outcomes,
never a value a caller sent.

The instrumentations record more than Quiver promises (a request's query, path,
``User-Agent``, ``Host``; the MCP SDK names its server span after the tool asked
for), so every exporter is wrapped (``Redacted``): a span keeps only the attributes
named here, the text of exceptions and error statuses is dropped (their type stays),
and so is ``tracestate``. The rules: docs/how-to/operating.md, What never goes into
a span.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_types.methods import SPEC_CLIENT_METHODS
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanContext, SpanKind, Status

KEPT_EXCEPTION_KEYS = ("exception.type", "exception.escaped")
# What a server span may say of the request it answered: Quiver's route for it,
# the method as the HTTP conventions normalise it (``_OTHER`` for a method no
# standard names), the answer's status; and the request id (a UUID).
SERVER_KEYS = frozenset(
    {
        "http.request.method",
        "http.route",
        "http.response.status_code",
        "error.type",
        "rpc.response.status_code",
        "gen_ai.operation.name",
        "quiver.request_id",
    }
)
# The spans of Quiver's own work: where it connected, what it asked there.
OWN_KEYS = SERVER_KEYS | {
    "server.address",
    "server.port",
    "db.system.name",
    "db.namespace",
    "db.query.text",
    "db.query.summary",
    "db.operation.name",
    "db.collection.name",
    "db.response.status_code",
    "rpc.system",
    "rpc.method",
    "mcp.method.name",
    "gen_ai.tool.name",
}
OWN_PREFIXES = ("quiver.", "celery.", "messaging.")
MCP_SDK = "mcp-python-sdk"
MCP_METHOD = "mcp.method.name"


class Redacted(SpanExporter):
    """An exporter that exports ``redacted`` spans only."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([redacted(s) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def redacted(span: ReadableSpan) -> ReadableSpan:
    """``span`` as it may leave the process (see the module's docstring)."""
    context = span.context
    if context is not None:
        context = SpanContext(
            context.trace_id,
            context.span_id,
            is_remote=context.is_remote,
            trace_flags=context.trace_flags,
        )
    return ReadableSpan(
        name=_name(span),
        context=context,
        parent=span.parent,
        resource=span.resource,
        attributes=_kept(span.attributes or {}, server=span.kind == SpanKind.SERVER),
        events=[_event(event) for event in span.events],
        links=span.links and [_link(link) for link in span.links],
        kind=span.kind,
        status=Status(span.status.status_code),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _kept(attributes: Mapping[str, Any], *, server: bool) -> dict[str, Any]:
    kept = {}
    for key, value in attributes.items():
        if server:
            keep = key in SERVER_KEYS
            keep |= key == MCP_METHOD and value in SPEC_CLIENT_METHODS
        else:
            keep = key in OWN_KEYS or key.startswith(OWN_PREFIXES)
        if keep:
            kept[key] = value
    return kept


def _name(span: ReadableSpan) -> str:
    """The MCP SDK names its server span ``<method> <the tool asked for>``, with
    the method as sent: the method alone, when it is one MCP has."""
    scope = span.instrumentation_scope
    if span.kind != SpanKind.SERVER or scope is None or scope.name != MCP_SDK:
        return span.name
    method = (span.attributes or {}).get(MCP_METHOD)
    return str(method) if method in SPEC_CLIENT_METHODS else "mcp"


def _event(event: Any) -> Event:
    """An event's name and time; of an exception, its type alone."""
    attributes = event.attributes or {}
    kept = {}
    if event.name == "exception":
        kept = {k: v for k, v in attributes.items() if k in KEPT_EXCEPTION_KEYS}
    return Event(event.name, kept, event.timestamp)


def _link(link: Any) -> Any:
    return type(link)(link.context, {})
