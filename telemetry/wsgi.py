"""Metrics and a server span for a WSGI app beside Django (``/mcp``), which
Django's middleware and instrumentation never see."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from telemetry import metrics, tracing

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def observed(app: WSGIApp, route: str) -> WSGIApp:
    """``app``, counted and timed as ``route``; a server span per request when
    tracing is on (the W3C ``traceparent`` header continues the caller's trace)."""
    served = _traced(app, route) if tracing.ON else app

    def application(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        began = time.perf_counter()
        status = {"code": 500}

        def started(line: str, headers: Any, exc_info: Any = None) -> Any:
            status["code"] = int(line.split(" ", 1)[0])
            return start(line, headers, exc_info)

        try:
            return served(environ, started)
        finally:
            method = str(environ.get("REQUEST_METHOD", ""))
            seconds = time.perf_counter() - began
            metrics.request_answered(route, method, status["code"], seconds)

    return application


def _traced(app: WSGIApp, route: str) -> WSGIApp:
    from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware
    from opentelemetry.util.http import sanitize_method

    def named(span: Any, environ: dict[str, Any]) -> None:
        # The method as the HTTP conventions name it: _OTHER for one no standard
        # has (the method is the caller's text).
        method = sanitize_method(str(environ.get("REQUEST_METHOD", "")))
        if span.is_recording():
            span.update_name(f"{method} {route}")
            span.set_attribute("http.route", route)

    return OpenTelemetryMiddleware(app, request_hook=named)  # type: ignore[no-any-return]
