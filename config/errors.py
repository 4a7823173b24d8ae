"""Error pages: styled HTML for people, the JSON error envelope under /api/.

Django calls these for errors no view handled (``handler404`` and friends in
``config/urls.py``). The 403 and 404 pages keep the navigation the person has
(``render_page``); the 500 page renders without a request context, so it needs
neither the database nor a context processor.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from config.pages import render_page
from config.retries import retry_body

API_PREFIX = "/api/"


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def _envelope(code: str, detail: str, status: int) -> JsonResponse:
    return JsonResponse({"error": code, "detail": detail}, status=status)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _envelope("not_found", f"path: no API endpoint at {request.path}", 404)
    return render_page(request, "404.html", {"request_path": request.path}, status=404)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _envelope("permission_denied", "permission: not allowed", 403)
    return render_page(request, "403.html", {"exception": str(exception)}, status=403)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _envelope("bad_request", "request: malformed", 400)
    return defaults.bad_request(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """An unexpected error: never to be sent again blindly (what it did is not
    known; for a tool call, its upstream may have run)."""
    if _is_api(request):
        detail = "server: an unexpected error; it has been logged"
        body = retry_body({"error": "server_error", "detail": detail}, None)
        return JsonResponse(body, status=500)
    return defaults.server_error(request)
