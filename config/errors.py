"""Error pages: styled HTML for people, the JSON error envelope for every
endpoint that is not a page (``answers_json``: the API and its schema,
``/metrics``, ``/healthz``, ``/mcp``, ``/.well-known/``, OAuth's token,
registration, revocation and keys).

Django calls these for errors no view handled (``handler404`` and friends in
``config/urls.py``, ``CSRF_FAILURE_VIEW``). The 403 and 404 pages keep the
navigation the person has (``render_page``); the 500 page renders without a
request context, so it needs neither the database nor a context processor.
``json_reads`` makes a plain Django view a JSON endpoint that only reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt

from config.pages import render_page
from config.retries import retry_body

JSON_PREFIXES = ("/api/", "/.well-known/", "/mcp/")
JSON_PATHS = frozenset(
    {"/metrics", "/healthz", "/mcp"}
    | {f"/oauth/{name}" for name in ("token", "register", "revoke", "jwks.json")}
)
READS = ("GET", "HEAD")


def answers_json(request: HttpRequest) -> bool:
    """Whether ``request``'s path is an endpoint for programs, whose every
    answer (an error's too) is JSON, never an HTML page."""
    return request.path in JSON_PATHS or request.path.startswith(JSON_PREFIXES)


def json_reads(
    view: Callable[..., HttpResponse],
) -> Callable[..., HttpResponse]:
    """``view`` for GET and HEAD; any other method is the API's JSON 405 naming
    them, answered before CSRF is checked (which would answer its HTML page):
    a view that only reads has nothing a forged request could change. The
    methods are held where Django's ``require_http_methods`` holds its own (the
    wrapper's closure), so whoever reads a view's methods reads both alike."""
    request_method_list = list(READS)

    @functools.wraps(view)
    def reads(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if request.method not in request_method_list:
            return method_not_allowed(request, READS)
        return view(request, *args, **kwargs)

    return csrf_exempt(reads)


def method_not_allowed(request: HttpRequest, allowed: tuple[str, ...]) -> JsonResponse:
    detail = f"method: {request.path} takes {', '.join(allowed)}"
    response = _envelope("method_not_allowed", detail, 405)
    response["Allow"] = ", ".join(allowed)
    return response


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A refused CSRF check: JSON where the endpoint answers JSON, else
    Django's page."""
    if answers_json(request):
        detail = "CSRF: a signed-in session's change needs the CSRF token"
        return _envelope("forbidden", detail, 403)
    return csrf.csrf_failure(request, reason)


def _envelope(code: str, detail: str, status: int) -> JsonResponse:
    return JsonResponse({"error": code, "detail": detail}, status=status)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if answers_json(request):
        return _envelope("not_found", f"path: no API endpoint at {request.path}", 404)
    return render_page(request, "404.html", {"request_path": request.path}, status=404)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if answers_json(request):
        return _envelope("permission_denied", "permission: not allowed", 403)
    return render_page(request, "403.html", {"exception": str(exception)}, status=403)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if answers_json(request):
        return _envelope("bad_request", "request: malformed", 400)
    return defaults.bad_request(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """An unexpected error: never to be sent again blindly (what it did is not
    known; for a tool call, its upstream may have run)."""
    if answers_json(request):
        detail = "server: an unexpected error; it has been logged"
        body = retry_body({"error": "server_error", "detail": detail}, None)
        return JsonResponse(body, status=500)
    return defaults.server_error(request)
