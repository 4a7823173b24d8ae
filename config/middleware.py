"""Request-level guards that must run before any view reads the body."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


class BodySizeLimitMiddleware:
    """Answer 413 with JSON when the declared body is larger than the limit."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.QUIVER_MAX_BODY_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            return JsonResponse(
                {
                    "error": "payload_too_large",
                    "detail": f"body: must be at most {limit} bytes, got {length}",
                },
                status=413,
            )
        return self.get_response(request)


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
        response = self.get_response(request)
        response["X-Request-ID"] = str(request_id)
        return response
