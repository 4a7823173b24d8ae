"""POST /api/v1/select and /select/batch; the per-catalog selection settings."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import QuerySet
from django.http import Http404, HttpResponse, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from audit.writer import PendingEvent, pending_total_ms, wait_all
from catalog.lookups import get_catalog_for_user
from config.api_errors import first_message
from config.http import request_id, request_started
from config.middleware import database_unavailable
from config.ratelimit import (
    BatchRateThrottle,
    ClientRateThrottle,
    WriteRateThrottle,
)
from config.retries import retry_body
from identity.access import access_for
from identity.permissions import CuratorWrites
from selection.api import serializers as s
from selection.api.input import select_input
from selection.engine import RequestError
from selection.models import SelectionSettingsChange
from selection.registry import RegressionRefused
from selection.requests import build_request
from selection.services import select as services
from selection.services.settings import (
    current_settings,
    refuse_unless_whole_catalog,
    restore_selection_settings,
    update_selection_settings,
)
from selection.services.timings import Arrival
from selection.services.tool_calls import (
    LinkedSelection,
    get_selection_for_caller,
    validate_tool_calls,
)
from selection.services.validate import find_tool, validate_tool_call
from selection.toolcalls.parse import ShapeError, parse_tool_calls

log = logging.getLogger(__name__)
AUDIT_FAILED = "audit: the answer could not be recorded, so it was not given; try again"


def answer_for(
    request: Request,
    data: dict[str, Any],
    *,
    timed: bool = True,
    pending: list[PendingEvent] | None = None,
) -> dict[str, Any]:
    """One selection for validated input; the engine's refusals name their field.

    ``timed``: report the time before the view (middleware, authentication,
    throttling, parsing) as ``auth`` (not for the later items of a batch).
    ``pending``: the audit row may commit while the answer is serialised; the
    caller must hold the answer until it has (``hold_until_recorded``)."""
    started = request_started(request) if timed else None
    arrived = None
    if started is not None:
        arrived = Arrival(started, (time.perf_counter() - started) * 1000)
    catalog = get_catalog_for_user(request.user, data["catalog"])
    try:
        answer = services.select_tools(
            catalog,
            build_request(access_for(request.user), data),
            fmt=data["format"],
            actor=request.user,
            request_id=request_id(request),
            arrived=arrived,
            pending=pending,
        )
    except RequestError as exc:
        raise ValidationError(
            {field: [f"{field}: {message}"] for field, message in exc.errors.items()}
        ) from exc
    return s.answer_body(answer)


class SelectView(generics.GenericAPIView):
    """Which few tools should the model see for this request?"""

    serializer_class = s.SelectInputSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [ClientRateThrottle]

    @extend_schema(request=s.SelectInputSerializer, responses=s.SelectOutputSerializer)
    def post(self, request: Request) -> Response:
        pending: list[PendingEvent] = []
        data = answer_for(request, select_input(request.data), pending=pending)
        response = Response(data)
        response.add_post_render_callback(hold_until_recorded(request, pending))
        return response


def hold_until_recorded(
    request: Request, pending: list[PendingEvent]
) -> Callable[[HttpResponse], HttpResponse | None]:
    """A post-render callback: the rendered answer waits until its audit row has
    committed (its flush ran while the answer was serialised and rendered). A row
    that could not be written replaces the answer with a 503 naming the part, so
    no answer leaves without its row. ``Server-Timing: audit_wait`` says how long
    the answer waited."""

    def callback(response: HttpResponse) -> HttpResponse | None:
        try:
            wait_all(pending)
        except (OperationalError, InterfaceError) as exc:
            log.warning("selection not recorded, answer withheld: %s", exc)
            return database_unavailable(request, exc)
        except Exception:
            log.exception("selection not recorded, answer withheld")
            body = {"error": "unavailable", "detail": AUDIT_FAILED, "service": "audit"}
            return JsonResponse(retry_body(body, None), status=503)
        response["Server-Timing"] = f"audit_wait;dur={pending_total_ms(pending):.3f}"
        return None

    return callback


class SelectBatchView(generics.GenericAPIView):
    """Up to 100 selections in one call; results in the order of the requests."""

    serializer_class = s.SelectBatchSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [BatchRateThrottle]

    @extend_schema(
        request=s.SelectBatchSerializer, responses=s.SelectBatchOutputSerializer
    )
    def post(self, request: Request) -> HttpResponse:
        """One transaction: the audit rows commit only with the rendered answer,
        so the log never holds an answer the client did not get."""
        envelope = self.get_serializer(data=request.data)
        envelope.is_valid(raise_exception=True)
        with transaction.atomic():
            results = [
                self._one(request, index, item)
                for index, item in enumerate(envelope.validated_data["requests"])
            ]
            body = JSONRenderer().render({"results": results})
        return HttpResponse(body, content_type="application/json")

    def _one(self, request: Request, index: int, item: Any) -> dict[str, Any]:
        """One item's answer, or its error in place; a failed item leaves no
        audit row (its savepoint is rolled back). A lost database is no item's
        fault: it fails the whole batch (a 503)."""
        try:
            valid = select_input(item)
        except ValidationError as exc:
            fields = exc.detail
            detail = f"requests[{index}].{first_message(fields)}"
            return {"error": "invalid", "detail": detail, "fields": fields}
        try:
            with transaction.atomic():
                return answer_for(request, valid, timed=index == 0)
        except (OperationalError, InterfaceError):
            raise
        except ValidationError as exc:
            refused = exc.detail
            detail = f"requests[{index}].{first_message(refused)}"
            return {"error": "invalid", "detail": detail, "fields": refused}
        except PermissionDenied as exc:
            return {"error": "permission_denied", "detail": f"requests[{index}].{exc}"}
        except Http404 as exc:
            return {"error": "not_found", "detail": f"requests[{index}].{exc}"}
        except Exception:
            log.exception("batch item %s could not be answered", index)
            detail = f"requests[{index}]: could not be answered; nothing was recorded"
            return {"error": "item_failed", "detail": detail}


class SelectionSettingsView(generics.GenericAPIView):
    """GET or PUT a catalog's selection settings (curators and admins write;
    curators, compliance and admins read: they name tools in core_tools, anchors
    and transitions, which an agent may not be allowed to know of)."""

    serializer_class = s.SelectionSettingsSerializer
    permission_classes = [CuratorWrites]
    throttle_classes = [WriteRateThrottle]

    def get(self, request: Request, slug: str) -> Response:
        catalog = get_catalog_for_user(request.user, slug)
        refuse_unless_whole_catalog(request.user)
        data, version = current_settings(catalog)
        return Response({"settings": data, "version": version})

    def put(self, request: Request, slug: str) -> Response:
        catalog = get_catalog_for_user(request.user, slug)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            data, version = update_selection_settings(
                catalog,
                serializer.validated_data["settings"],
                actor=request.user,
                request_id=request_id(request),
                reason=serializer.validated_data.get("reason", ""),
                accept_regression=serializer.validated_data.get("accept_regression"),
            )
        except RegressionRefused as exc:
            body = {"detail": str(exc), **exc.report}
            return Response(body, status=status.HTTP_409_CONFLICT)
        return Response(
            {"settings": data, "version": version}, status=status.HTTP_200_OK
        )


class SettingsVersionsView(generics.ListAPIView):
    """Every version of a catalog's selection settings, newest first: who, when,
    why, and what each changed (read by the same people as the settings)."""

    serializer_class = s.SettingsChangeSerializer
    permission_classes = [CuratorWrites]

    def get_queryset(self) -> QuerySet[SelectionSettingsChange]:
        catalog = get_catalog_for_user(self.request.user, self.kwargs["slug"])
        refuse_unless_whole_catalog(self.request.user)
        return SelectionSettingsChange.objects.history_of(catalog)


class SettingsRestoreView(generics.GenericAPIView):
    """A new settings version equal to version ``n`` (audited like any save)."""

    serializer_class = s.SettingsRestoreSerializer
    permission_classes = [CuratorWrites]
    throttle_classes = [WriteRateThrottle]

    @extend_schema(
        request=s.SettingsRestoreSerializer, responses=s.SelectionSettingsSerializer
    )
    def post(self, request: Request, slug: str, version: int) -> Response:
        catalog = get_catalog_for_user(request.user, slug)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            data, new_version = restore_selection_settings(
                catalog,
                version,
                actor=request.user,
                request_id=request_id(request),
                accept_regression=serializer.validated_data.get("accept_regression"),
            )
        except RegressionRefused as exc:
            body = {"detail": str(exc), **exc.report}
            return Response(body, status=status.HTTP_409_CONFLICT)
        return Response({"settings": data, "version": new_version})


class ValidateCallView(generics.GenericAPIView):
    """Check a model's tool call against the tool's canonical schema."""

    serializer_class = s.ValidateInputSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [ClientRateThrottle]

    def post(self, request: Request) -> Response:
        data = _body(self, request)
        catalog = get_catalog_for_user(request.user, data["catalog"])
        tool = find_tool(catalog, data["tool"], access_for(request.user))
        if tool is None:
            raise NotFound(f"tool: no tool {data['tool']!r} in {catalog.slug!r}")
        answer = validate_tool_call(
            catalog,
            tool,
            data["arguments"],
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(answer)


class ToolCallsValidateView(generics.GenericAPIView):
    """Check the tool calls in a model's output (any provider's shape) against the
    catalog, the caller's access and the selection they answer."""

    serializer_class = s.ToolCallsInputSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [ClientRateThrottle]

    def post(self, request: Request) -> Response:
        data = _body(self, request)
        access = access_for(request.user)
        selection = None
        if data.get("selection_id") is not None:
            selection = get_selection_for_caller(
                access, data["selection_id"], caller=request.user
            )
        catalog = get_catalog_for_user(request.user, _calls_catalog(data, selection))
        try:
            parsed = parse_tool_calls(data["output"], data.get("format"))
        except ShapeError as exc:
            raise ValidationError({exc.field: [exc.rule]}) from exc
        answer = validate_tool_calls(
            catalog,
            parsed,
            access=access,
            selection=selection,
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(answer)


def _body(view: generics.GenericAPIView, request: Request) -> Any:
    """The request's body as the view's serializer cleans it (else a 400 naming
    the field)."""
    serializer = view.get_serializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _calls_catalog(data: dict[str, Any], selection: LinkedSelection | None) -> str:
    """The asked catalog, else the selection's, else ``default``; a selection
    answers calls in its own catalog only."""
    asked = data.get("catalog")
    if selection is None:
        return asked or "default"
    if asked and asked != selection.catalog_slug:
        rule = f"was made in catalog {selection.catalog_slug!r}, not {asked!r}"
        raise ValidationError({"selection_id": [rule]})
    return selection.catalog_slug
