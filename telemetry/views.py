"""``GET /metrics``: the Prometheus text format, for the metrics token or an admin.

Not part of the API (no /api/ path, not in the OpenAPI schema): a scraper sends
``Authorization: Bearer <QUIVER_METRICS_TOKEN>``; an admin-scope API key or a
signed-in admin may read it too. The token is checked before anything touches
the database, so a scrape still answers while the database is down (and says so:
``quiver_metrics_database_up 0``). Anything else is refused before any metric is
read: no credentials 401, a wrong token or an unknown key 401 (with the
unknown-key penalty, shaped like a key or not, so the token cannot be guessed
faster than a key; 429 past the limit per address), a key or person who is not an
admin of every catalog 403 (the labels name every catalog and source).
"""

from __future__ import annotations

import hmac
import math

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST
from rest_framework.exceptions import APIException
from rest_framework.request import Request

from audit.actors import Actor
from config.errors import json_reads
from config.retries import mark_retry, retry_body
from identity.access import access_for
from identity.auth import ApiKeyAuthentication
from telemetry.exposition import render

BEARER = "Bearer "


@json_reads
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(render(), content_type=CONTENT_TYPE_LATEST)


def has_metrics_token(request: HttpRequest) -> bool:
    token = str(settings.QUIVER_METRICS_TOKEN)
    header = request.headers.get("Authorization", "")
    if not token or not header.startswith(BEARER):
        return False
    sent = header[len(BEARER) :].strip()
    return hmac.compare_digest(sent.encode(), token.encode())


def _refusal(request: HttpRequest) -> HttpResponse | None:
    if has_metrics_token(request):
        return None
    user: Actor = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        try:
            found = ApiKeyAuthentication().authenticate(Request(request))
        except APIException as exc:  # a wrong token or key: 401, or 429 past many
            wait = getattr(exc, "wait", None) or 1
            return _refused(401, str(exc.detail), status=exc.status_code, wait=wait)
        if found is None:
            detail = "Authorization: send Bearer <metrics token or admin API key>"
            return _refused(401, detail)
        user = found[0]
    access = access_for(user)
    if not (access.is_admin and access.all_catalogs):
        # Labels name every catalog and source: an admin of some catalogs only
        # must not learn of the others.
        detail = "metrics: only the metrics token or an admin of every catalog"
        return _refused(403, detail)
    return None


def _refused(
    code: int, detail: str, *, status: int | None = None, wait: float = 1
) -> JsonResponse:
    """The refusal as the API words it: only a 429 may be sent again, and says
    when (``retryable``, ``Retry-After``)."""
    status = status if status == 429 else code
    error = {401: "unauthorized", 403: "forbidden", 429: "throttled"}[status]
    retry_after = math.ceil(wait) if status == 429 else None
    body = retry_body({"error": error, "detail": detail}, retry_after)
    response = JsonResponse(body, status=status)
    mark_retry(response, retry_after)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="quiver-metrics"'
    return response
