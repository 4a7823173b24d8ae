"""How the console tells an htmx fragment request from a whole-page request."""

from __future__ import annotations

from django.http import HttpRequest


def is_htmx_partial(request: HttpRequest) -> bool:
    """True when the caller wants only the fragment, not the whole page.

    Boosted requests and history restores (htmx's cache missed after Back) swap the
    whole body, so they get the full page like a plain browser request does.
    """
    headers = request.headers
    return (
        headers.get("HX-Request") == "true"
        and headers.get("HX-Boosted") != "true"
        and headers.get("HX-History-Restore-Request") != "true"
    )
