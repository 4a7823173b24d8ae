"""Content-Security-Policy on every response: scripts only from our own files.

A small middleware rather than django-csp: one fixed policy, no nonces, nothing
per view, so a dependency would add settings without adding anything we use.
Inline ``<script>``, ``on*=`` handlers and ``javascript:`` URLs are all refused by
the browser; page scripts live under ``static/js/``. Inline ``style=""``
attributes stay allowed (progress bars set their width that way); ``<style>``
blocks do not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "style-src-attr 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def allow_form_redirects(response: HttpResponse, origins: Iterable[str]) -> None:
    """Let a page's forms end at these other origins too: a form whose POST is
    answered with a redirect elsewhere (a person sent to an authorization
    server) is stopped by the browser unless ``form-action`` names where it
    lands. Only origins (scheme, host, port) the page's view vouches for."""
    extra = " ".join(
        sorted({o for o in origins if o and " " not in o and ";" not in o})
    )
    if extra:
        response.headers["Content-Security-Policy"] = POLICY.replace(
            "form-action 'self'", f"form-action 'self' {extra}"
        )


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
