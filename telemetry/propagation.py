"""What of a trace crosses a process boundary: the W3C ``traceparent`` alone.

Quiver continues a caller's trace (the ``traceparent`` of a request's headers, of
an MCP request's ``_meta``, of a Celery task's headers) and hands its own span on
(the ``_meta`` of each upstream MCP request, a task's headers, an outgoing HTTP
request's headers). Nothing else of a trace's context goes either way: a
caller's ``tracestate`` (vendors' opaque state) and ``baggage`` (any keys and
values, kilobytes of them) are never read, so they reach no upstream and no
span; and only a span this process made is handed on, never a span id as a
caller sent it (with tracing off Quiver makes no span, so nothing goes). This
propagator replaces OpenTelemetry's default (``tracecontext,baggage``) in every
process, tracing on or off, whatever ``OTEL_PROPAGATORS`` says.
"""

from __future__ import annotations

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import (
    CarrierT,
    Getter,
    Setter,
    TextMapPropagator,
    default_getter,
    default_setter,
)
from opentelemetry.trace.propagation.tracecontext import (
    TraceContextTextMapPropagator,
)

W3C = TraceContextTextMapPropagator()


class OwnSpanOnly(TextMapPropagator):
    """``traceparent`` in, without ``tracestate``; ``traceparent`` out, only for
    a span of this process."""

    def extract(
        self,
        carrier: CarrierT,
        context: Context | None = None,
        getter: Getter[CarrierT] = default_getter,
    ) -> Context:
        base = context if context is not None else Context()
        found = trace.get_current_span(W3C.extract(carrier, Context(), getter))
        sent = found.get_span_context()
        if not sent.is_valid:
            return base
        parent = trace.SpanContext(
            sent.trace_id, sent.span_id, is_remote=True, trace_flags=sent.trace_flags
        )
        return trace.set_span_in_context(trace.NonRecordingSpan(parent), base)

    def inject(
        self,
        carrier: CarrierT,
        context: Context | None = None,
        setter: Setter[CarrierT] = default_setter,
    ) -> None:
        current = trace.get_current_span(context).get_span_context()
        if not current.is_valid or current.is_remote:
            return  # no span of ours: a caller's context is never passed on as is
        own = trace.SpanContext(
            current.trace_id,
            current.span_id,
            is_remote=False,
            trace_flags=current.trace_flags,
        )
        only = trace.set_span_in_context(trace.NonRecordingSpan(own), Context())
        W3C.inject(carrier, only, setter)

    @property
    def fields(self) -> set[str]:
        return {"traceparent"}


def install() -> None:
    """Make ``OwnSpanOnly`` the propagator every library of this process uses
    (the MCP SDK's ``_meta``, Django's, Celery's and httpx's instrumentation)."""
    propagate.set_global_textmap(OwnSpanOnly())
