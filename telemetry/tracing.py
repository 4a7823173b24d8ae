"""OpenTelemetry traces, off unless the standard ``OTEL_*`` variables ask for them.

On, each process (``TelemetryConfig.ready``) sets the SDK's tracer provider and
instruments Django, psycopg, Celery and httpx; Quiver adds the selection's and the
call's stages (``span``), and the trace goes along to the event loop thread and to
the upstream MCP server. Off, Quiver's hooks cost one flag check (``ON``). No value
a caller sent leaves in a span: every exporter is wrapped (``telemetry.redaction``).
Turning them on and what a span holds: docs/how-to/operating.md, Traces.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar, cast

from django.core.exceptions import ImproperlyConfigured
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Status, StatusCode

from telemetry.redaction import Redacted

F = TypeVar("F", bound=Callable[..., Any])
ON = False
_NOTHING = nullcontext()
_tracer = trace.get_tracer("quiver")
_state: dict[str, Any] = {"provider": None, "processors": [], "instrumented": []}
# Health checks and scrapes come every few seconds and say nothing of a request.
# (Regexes searched in the request's URL without its query.)
EXCLUDED_URLS = r"^https?://[^/]+/healthz$,^https?://[^/]+/metrics$"


def enabled_by(environ: Mapping[str, str]) -> bool:
    """Whether these ``OTEL_*`` variables ask for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def start_from_environment() -> None:
    """Start tracing in this process if the environment asks for it."""
    if enabled_by(os.environ):
        for exporter in exporters(os.environ):
            start(exporter)


def exporters(environ: Mapping[str, str]) -> list[SpanExporter]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names (``otlp`` by default)."""
    names = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "otlp"
    made: list[SpanExporter] = []
    for name in (part.strip() for part in names.split(",")):
        if name == "console":
            made.append(ConsoleSpanExporter())
        elif name == "otlp":
            made.append(_otlp(environ))
        elif name != "none":
            raise ImproperlyConfigured(
                f"OTEL_TRACES_EXPORTER: expected otlp, console or none, got {name!r}"
            )
    return made


def _otlp(environ: Mapping[str, str]) -> SpanExporter:
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )
    if protocol.strip() != "http/protobuf":
        raise ImproperlyConfigured(
            "OTEL_EXPORTER_OTLP_PROTOCOL: Quiver exports OTLP as http/protobuf "
            f"(the collector's port 4318), got {protocol!r}"
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter,
    )

    return OTLPSpanExporter()  # endpoint, headers, timeout: from OTEL_EXPORTER_*


def start(exporter: SpanExporter, *, batch: bool = True) -> None:
    """Send this process's spans to ``exporter`` (redacted) and instrument the
    libraries; ``batch=False`` exports each span as it ends (tests)."""
    global ON
    # The stable HTTP and database conventions (http.request.method,
    # db.query.text...), read once by the instrumentations when they start.
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "http,database")
    provider = _provider()
    wrapped = Redacted(exporter)
    processor = BatchSpanProcessor(wrapped) if batch else SimpleSpanProcessor(wrapped)
    provider.add_span_processor(processor)
    _state["processors"].append(processor)
    _instrument(provider)
    ON = True


def stop() -> None:
    """Stop tracing here (tests): exporters shut, libraries no longer traced."""
    global ON
    ON = False
    for processor in _state["processors"]:
        processor.shutdown()
    _state["processors"].clear()
    for instrumentor in _state["instrumented"]:
        instrumentor.uninstrument()
    _state["instrumented"].clear()


def _provider() -> TracerProvider:
    """The process's SDK provider, made once (the global one can be set once)."""
    if _state["provider"] is None:
        attributes = {}
        named = "service.name=" in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
        if not os.environ.get("OTEL_SERVICE_NAME") and not named:
            attributes["service.name"] = "quiver"
        provider = TracerProvider(resource=Resource.create(attributes))
        trace.set_tracer_provider(provider)
        _state["provider"] = provider
    provider = _state["provider"]
    assert isinstance(provider, TracerProvider)
    return provider


def _instrument(provider: TracerProvider) -> None:
    if _state["instrumented"]:
        return
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    excluded = os.environ.get("OTEL_PYTHON_DJANGO_EXCLUDED_URLS", EXCLUDED_URLS)
    django = DjangoInstrumentor()
    django.instrument(
        tracer_provider=provider,
        excluded_urls=excluded,
        response_hook=_request_id,
    )
    others = (PsycopgInstrumentor(), CeleryInstrumentor(), HTTPXClientInstrumentor())
    for instrumentor in others:
        instrumentor.instrument(tracer_provider=provider)
    _state["instrumented"].extend([django, *others])


def _request_id(span: Any, request: Any, response: Any) -> None:
    request_id = getattr(request, "request_id", None)
    if request_id is not None and span.is_recording():
        span.set_attribute("quiver.request_id", str(request_id))


def span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A child span of the current one (or nothing, when tracing is off). An
    exception marks it an error of that exception's type, never its text."""
    if not ON:
        return _NOTHING
    return _span(name, attributes)


@contextmanager
def _span(name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    with _tracer.start_as_current_span(
        name,
        attributes={k: v for k, v in attributes.items() if v is not None},
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_attribute("error.type", type(exc).__qualname__)
            current.set_status(Status(StatusCode.ERROR))
            raise


def traced(name: str, **attributes: Any) -> Callable[[F], F]:
    """A function run in its own span ``name`` (a flag check when off)."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not ON:
                return function(*args, **kwargs)
            with _span(name, attributes):
                return function(*args, **kwargs)

        return cast(F, wrapper)

    return decorate


def annotate(**attributes: Any) -> None:
    """Set attributes on the current span (nothing when tracing is off)."""
    if ON:
        current = trace.get_current_span()
        for key, value in attributes.items():
            if value is not None:
                current.set_attribute(key, value)


def stages(prefix: str) -> Callable[[str], AbstractContextManager[Any]] | None:
    """A span per named stage (``prefix.name``) for code that takes a stage
    hook (the selection engine); None when tracing is off."""
    if not ON:
        return None
    return lambda name: span(f"{prefix}.{name}")
