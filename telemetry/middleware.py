"""Counts and times every request Django answers, by its URL pattern."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from telemetry import metrics

UNMATCHED = "unmatched"
# A regex route's named group (the API router's), shown as <name>.
GROUP = re.compile(r"\(\?P<(\w+)>(?:[^()\\]|\\.)*\)")


class RequestMetricsMiddleware:
    """Outermost, so refusals made before any view (413, 400) count too. The
    route label is the pattern (``/api/v1/tools/<int:pk>``), never the path."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        began = time.perf_counter()
        response = self.get_response(request)
        metrics.request_answered(
            route_of(request),
            request.method or "",
            response.status_code,
            time.perf_counter() - began,
        )
        return response


def route_of(request: HttpRequest) -> str:
    match = request.resolver_match
    if match is None:
        if request.path_info.startswith(settings.STATIC_URL):
            return "static"
        try:  # answered before URL resolution (a 413, say): find its pattern
            match = resolve(request.path_info)
        except Resolver404:
            return UNMATCHED
    return readable(str(match.route))


@functools.lru_cache(maxsize=1024)
def readable(route: str) -> str:
    """``api/v1/tools/(?P<pk>[^/.]+)/?$`` -> ``/api/v1/tools/<pk>/``."""
    route = GROUP.sub(r"<\1>", route)
    for regex, plain in (("/?", "/"), ("\\.", "."), ("^", ""), ("$", "")):
        route = route.replace(regex, plain)
    return "/" + route
