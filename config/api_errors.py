"""One JSON shape for every API error: {"error": code, "detail": text, "fields": {...}}.

DRF's default handler already turns validation and permission errors into 4xx; this
adds a stable envelope, maps Django's own errors, and never lets a ValidationError
from a model's ``full_clean`` become a 500. A 429 or 5xx also says whether it may
be sent again (``retryable``, with ``Retry-After`` when it may: config.retries).
"""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, InterfaceError, OperationalError
from django.http import Http404
from rest_framework import status
from rest_framework.exceptions import APIException, Throttled
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from config.exceptions import Conflict, LimitReached
from config.middleware import database_trouble
from config.retries import mark_retry, retry_body


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Wrap DRF's handler: field errors under "fields", a code under "error"; a
    429 or 5xx says whether it may be sent again."""
    response = _answer(exc, context)
    if response is None or (response.status_code != 429 and response.status_code < 500):
        return response
    wait = _retry_after(exc)
    if isinstance(response.data, dict):
        response.data = retry_body(response.data, wait)
    mark_retry(response, wait)
    return response


def _retry_after(exc: Exception) -> int | None:
    """Seconds before sending again, for what passes (a limit, an outage: nothing
    was done); None for the rest (a query too slow, anything unexpected)."""
    if isinstance(exc, LimitReached):
        return exc.retry_after
    if isinstance(exc, Throttled):
        return max(1, math.ceil(getattr(exc, "wait", None) or 1))
    if isinstance(exc, OperationalError | InterfaceError):
        return database_trouble(exc)[1]
    return None


def _answer(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DjangoValidationError):
        fields = validation_fields(exc)
        return _response("invalid", first_message(fields), fields, 400)
    if isinstance(exc, RequestDataTooBig):
        return _response("payload_too_large", "body: too large", {}, 413)
    if isinstance(exc, Conflict):
        return _response("conflict", str(exc), {exc.field: [str(exc)]}, 409)
    if isinstance(exc, LimitReached):
        return _response("limit_reached", str(exc), {exc.field: [str(exc)]}, 429)
    if isinstance(exc, OperationalError | InterfaceError):
        detail, _retry = database_trouble(exc)
        unavailable = _response("unavailable", detail, {}, 503)
        unavailable.data["service"] = "database"
        return unavailable
    if isinstance(exc, IntegrityError):
        return _response("conflict", "the change conflicts with existing data", {}, 409)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    code = _code(exc)
    if isinstance(data, dict) and set(data) == {"detail"}:
        response.data = {"error": code, "detail": str(data["detail"])}
    else:
        fields = data if isinstance(data, dict) else {"": data}
        response.data = {
            "error": code,
            "detail": first_message(fields),
            "fields": fields,
        }
    return response


def _response(
    code: str, detail: str, fields: dict[str, Any], status_code: int
) -> Response:
    body: dict[str, Any] = {"error": code, "detail": detail}
    if fields:
        body["fields"] = fields
    return Response(body, status=status_code or status.HTTP_400_BAD_REQUEST)


def validation_fields(exc: DjangoValidationError) -> dict[str, Any]:
    """A Django ``ValidationError``'s messages by field ("" for none)."""
    return exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}


def first_message(fields: Any, path: str = "") -> str:
    """'field.sub: message' for the first error found, so the detail names the field."""
    if isinstance(fields, dict):
        for key, value in fields.items():
            name = f"{path}.{key}" if path and key else (key or path)
            return first_message(value, name)
    if isinstance(fields, list) and fields:
        return first_message(fields[0], path)
    text = str(fields)
    if not path or text.startswith(f"{path}:"):  # the message names it already
        return text
    return f"{path}: {text}"


def _code(exc: Exception) -> str:
    if isinstance(exc, APIException):
        return str(exc.default_code)
    if isinstance(exc, Http404):
        return "not_found"
    if isinstance(exc, PermissionDenied):
        return "permission_denied"
    return "error"
