"""Content-Security-Policy on every response: scripts only from our own files.

A small middleware rather than django-csp: one fixed policy, no nonces, nothing
per view, so a dependency would add settings without adding anything we use.
Inline ``<script>``, ``on*=`` handlers and ``javascript:`` URLs are all refused by
the browser; page scripts live under ``static/js/``. Inline ``style=""``
attributes stay allowed (progress bars set their width that way); ``<style>``
blocks do not.
"""

from __future__ import annotations

import re
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


# A source expression a page may add to form-action: a scheme and an origin of
# plain characters (nothing that could end the directive or add another).
FORM_TARGET = re.compile(r"^[a-z][a-z0-9+.-]*:(//[A-Za-z0-9.\-\[\]:]+)?$")


def policy_with_form_target(source: str) -> str:
    """The policy, its form-action also allowing ``source`` (an origin, or a
    scheme such as ``com.example.app:``): a form whose answer redirects there
    (OAuth's consent, back to the client) would otherwise be stopped by the
    browser. A source that is not plain is not added."""
    if not FORM_TARGET.match(source):
        return POLICY
    return POLICY.replace("form-action 'self'", f"form-action 'self' {source}")


def allow_form_redirects(response: HttpResponse, origins: Iterable[str]) -> None:
    """Let a page's forms end at these other origins too (each a plain
    ``FORM_TARGET``, the rest left out): a form whose POST is answered with a
    redirect to an authorization server is stopped by the browser unless
    ``form-action`` names where it lands."""
    extra = " ".join(sorted({o for o in origins if FORM_TARGET.match(o)}))
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
