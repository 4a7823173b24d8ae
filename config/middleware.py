"""Request-level guards that must run before any view reads the body."""

from __future__ import annotations

import io
import logging
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.db import InterfaceError, OperationalError
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
)
from django.template.loader import render_to_string

from config.bodies import Refusal, is_chunked, read_chunked
from config.jsonparse import BAD_TEXT_RULE, has_bad_text, printable
from config.retries import RETRY_AFTER_S, retry_body

DATABASE_DOWN = "database: not reachable; try again shortly"
DATABASE_BUSY = "database: busy, every connection is in use; try again in {} s"
BUSY_RETRY_AFTER_S = 2
# Postgres refusing a connection for want of a free one (max_connections, the
# slots kept for superusers, a role's or a database's own limit): its message,
# since a refused connection carries no SQLSTATE. Load, not an outage.
BUSY_MARKS = (
    "too many clients",
    "too many connections",
    "connection slots are reserved",
)
BUSY_STATES = frozenset({"53300"})  # too_many_connections
logger = logging.getLogger(__name__)


class BodySizeLimitMiddleware:
    """Answer 413 with JSON when the body is larger than the limit; read a chunked
    body (no Content-Length) here, so the views see it instead of an empty one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.QUIVER_MAX_BODY_BYTES
        if is_chunked(request.META):
            refused = read_chunked_body(request, limit)
            if refused is not None:
                return refused
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            return _too_large(f"body: must be at most {limit} bytes, got {length}")
        return self.get_response(request)


def _too_large(detail: str) -> HttpResponse:
    return JsonResponse({"error": "payload_too_large", "detail": detail}, status=413)


def read_chunked_body(request: HttpRequest, limit: int) -> HttpResponse | None:
    """Read a chunked body (config.bodies) and give it to Django as if it had a
    Content-Length; Django reads no body without one, so the view would see it
    empty."""
    body = read_chunked(request.META, limit)
    if isinstance(body, Refusal):
        return JsonResponse(
            {"error": body.error, "detail": body.detail}, status=body.status
        )
    request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[assignment]
    request.META["CONTENT_LENGTH"] = str(len(body))
    return None


class RequestIdMiddleware:
    """Give each request a UUID (or keep a valid X-Request-ID) for change and audit
    records, and echo it back in the response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            request_id = uuid.UUID(request.headers.get("X-Request-ID", ""))
        except ValueError:
            request_id = uuid.uuid4()
        request.request_id = request_id  # type: ignore[attr-defined]
        # When the request reached Django (config.http.request_started).
        request.started = time.perf_counter()  # type: ignore[attr-defined]
        response = self.get_response(request)
        response["X-Request-ID"] = str(request_id)
        return response


class UnstorableTextMiddleware:
    """Refuse a URL whose path or query holds a NUL or a lone surrogate (``?q=%00``).

    Such text can never match anything stored and makes Postgres fail mid-query; an
    API caller gets a 400 JSON answer naming the parameter, anyone else a plain 400.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        field = _bad_url_part(request)
        if field is None:
            return self.get_response(request)
        detail = f"{field}: {BAD_TEXT_RULE}"
        if request.path_info.startswith("/api/"):
            body = {"error": "invalid", "detail": detail, "fields": {field: [detail]}}
            return JsonResponse(body, status=400)
        return HttpResponseBadRequest(detail, content_type="text/plain")


def _bad_url_part(request: HttpRequest) -> str | None:
    """``path`` or the name of the first query parameter holding unstorable text."""
    if has_bad_text(request.path_info):
        return "path"
    for key, values in request.GET.lists():
        if has_bad_text(key) or any(has_bad_text(value) for value in values):
            return printable(key)
    return None


def database_trouble(exc: BaseException | None) -> tuple[str, int]:
    """What a database error tells the caller, and when to try again: busy (no
    connection was free: load, ``BUSY_MARKS``) or not reachable."""
    seen = 0
    while exc is not None and seen < 10:
        text = str(exc)
        if getattr(exc, "sqlstate", None) in BUSY_STATES or any(
            mark in text for mark in BUSY_MARKS
        ):
            return DATABASE_BUSY.format(BUSY_RETRY_AFTER_S), BUSY_RETRY_AFTER_S
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return DATABASE_DOWN, RETRY_AFTER_S


def database_unavailable(
    request: HttpRequest, exc: BaseException | None = None
) -> HttpResponse:
    """503 naming the database (busy or not reachable, ``database_trouble``):
    JSON for the API (retryable: nothing was done), a page for people. The page
    is rendered without the request (its context processors would query the
    database again)."""
    detail, retry_after = database_trouble(exc)
    if request.path.startswith("/api/") or "html" not in request.headers.get(
        "Accept", ""
    ):
        body = {"error": "unavailable", "detail": detail, "service": "database"}
        body = retry_body(body, retry_after)
        response: HttpResponse = JsonResponse(body, status=503)
    else:
        page = render_to_string("503.html", {"detail": detail})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(retry_after)
    return response


class DatabaseUnavailableMiddleware:
    """A lost or busy database answers 503 at once, not a 500 page; Django's
    connection health checks reconnect when it is back, with no restart."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        if isinstance(exception, OperationalError | InterfaceError):
            logger.warning("database unavailable: %s", exception)
            return database_unavailable(request, exception)
        return None
