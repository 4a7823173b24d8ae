"""The audit log over the API: read-only, for compliance and admins."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from django import forms
from django.conf import settings
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from audit.choices import EventType
from audit.export import CONTENT_TYPES, FORMATS, stream_export
from audit.filters import (
    EXPORTING,
    PAGING,
    AuditFilterForm,
    FilterError,
    filter_events,
)
from audit.hashing import CONTENT_FIELDS, SEAL_FIELDS
from audit.models import AuditEvent
from audit.services import parse_since, seal_pending, verify_chain
from audit.verify import CHECKPOINT_SOURCES, WEB_DEADLINE_S, VerifyTooSlow
from audit.verify_scope import check_for
from compliance.paging import CappedPagination, time_limit
from config.params import (
    EARLIEST_DAY,
    LATEST_DAY,
    MAX_ID,
    DayField,
    in_day_range,
    whole_number,
)
from identity.access import access_for
from identity.permissions import ComplianceReads
from selection.services.why_not import why_not


class AuditEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = ["id", *CONTENT_FIELDS, "seq", *SEAL_FIELDS]


def _filter_parameters() -> list[OpenApiParameter]:
    """The console's filters, documented from the one form that parses them."""
    return [
        OpenApiParameter(name, _parameter_type(field), description=str(field.label))
        for name, field in AuditFilterForm.base_fields.items()
    ]


def _parameter_type(field: forms.Field) -> Any:
    """Days as dates (a sweep then tries the extremes), the rest as text."""
    if isinstance(field, DayField):
        return OpenApiTypes.DATE
    if isinstance(field, forms.UUIDField):
        return OpenApiTypes.UUID
    if isinstance(field, forms.BooleanField):
        return OpenApiTypes.BOOL
    return str


EXPORT_FORMAT = OpenApiParameter("format", str, enum=list(FORMATS), default="csv")
VERIFY_PARAMETERS = [
    OpenApiParameter(
        "since",
        str,
        description="an audit id, or an ISO date or date-time (UTC when it names "
        f"no zone) from {EARLIEST_DAY} to {LATEST_DAY}",
    ),
    OpenApiParameter(
        "checkpoints",
        str,
        enum=list(CHECKPOINT_SOURCES),
        description="where the checkpoints come from; default: the configured "
        "store (QUIVER_AUDIT_CHECKPOINT_STORE)",
    ),
]
MAX_TOOL_NAME = 200
SINCE_RULE = (
    f"must be an audit id (1 to {MAX_ID}) or an ISO date or date-time "
    f"from {EARLIEST_DAY} to {LATEST_DAY}"
)


def _verify_since(text: str | None) -> int | datetime | None:
    """``?since=`` of verify, bounded, or a 400 naming it."""
    if not text:
        return None
    try:
        start = parse_since(text)
    except ValueError as exc:
        raise ValidationError({"since": [SINCE_RULE]}) from exc
    if isinstance(start, int):
        if whole_number(text, MAX_ID) is None:
            raise ValidationError({"since": [SINCE_RULE]})
    elif not in_day_range(start):
        raise ValidationError({"since": [SINCE_RULE]})
    return start


EXPORT_TYPES = {(200, CONTENT_TYPES[fmt].split(";")[0]): str for fmt in FORMATS}


class VerifyTooSlowError(APIException):
    """A 503 naming the verify that ran past ``WEB_DEADLINE_S``."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "too_slow"


@extend_schema_view(
    list=extend_schema(
        parameters=_filter_parameters(),
        description="The audit log, newest first, filtered by the query "
        "parameters: compliance and admins.",
    ),
    retrieve=extend_schema(
        description="One audit event with its input and output snapshots."
    ),
)
class AuditEventViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = AuditEventSerializer
    permission_classes = [ComplianceReads]
    pagination_class = CappedPagination

    def get_queryset(self) -> QuerySet[AuditEvent]:
        """The caller's events; the list narrowed by the console's filters (an
        unknown or bad one is a 400 naming it)."""
        events = AuditEvent.objects.visible_to(access_for(self.request.user))
        if self.action not in ("list", "export"):
            return events
        extra = EXPORTING if self.action == "export" else PAGING
        try:
            return filter_events(events, self.request.query_params, extra=extra)
        except FilterError as exc:
            raise ValidationError(exc.fields) from exc

    def perform_content_negotiation(
        self, request: Request, force: bool = False
    ) -> tuple[Any, str]:
        # The export answers CSV or JSONL whatever Accept says; its errors are JSON.
        return super().perform_content_negotiation(
            request, force=force or self.action == "export"
        )

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        # Readers see rows sealed; a sealer already at work is not waited for.
        seal_pending(wait=False)
        with time_limit():
            return super().list(request, *args, **kwargs)

    def retrieve(self, request: Request, *args: object, **kwargs: object) -> Response:
        seal_pending(wait=False)
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(parameters=VERIFY_PARAMETERS)
    @action(detail=False, methods=["get"])
    def verify(self, request: Request) -> Response:
        """Seal, then check the chain against its keys and checkpoints: ok is false
        with the first bad row's id, the kind of damage and what was found. A
        reader limited to some catalogs is told only of their records
        (audit.verify_scope)."""
        start = _verify_since(request.query_params.get("since"))
        source = request.query_params.get("checkpoints")
        if source is not None and source not in CHECKPOINT_SOURCES:
            raise ValidationError(
                {"checkpoints": [f"must be one of {', '.join(CHECKPOINT_SOURCES)}"]}
            )
        if source == "s3" and not settings.QUIVER_AUDIT_CHECKPOINT_S3:
            raise ValidationError(
                {"checkpoints": ["s3 needs QUIVER_AUDIT_CHECKPOINT_S3 to be set"]}
            )
        try:
            check = verify_chain(
                since=start,
                workers=2,
                checkpoints=source,
                deadline_s=WEB_DEADLINE_S,
            )
        except VerifyTooSlow as exc:
            raise VerifyTooSlowError(str(exc)) from exc
        return Response(check_for(check, access_for(request.user), start))

    @extend_schema(
        parameters=[EXPORT_FORMAT, *_filter_parameters()], responses=EXPORT_TYPES
    )
    @action(detail=False, methods=["get"])
    def export(self, request: Request) -> StreamingHttpResponse:
        """The filtered events as ``?format=csv`` (default) or ``jsonl``, oldest
        first, streamed from a server-side cursor; each row with seq and hash."""
        fmt = request.query_params.get("format", "csv")
        if fmt not in FORMATS:
            raise ValidationError({"format": [f"must be one of {', '.join(FORMATS)}"]})
        events = self.get_queryset()
        seal_pending(wait=False)
        return stream_export(events, fmt)

    @extend_schema(
        parameters=[
            OpenApiParameter("tool", str, required=True, description="a tool name")
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"], url_path="why-not")
    def why_not(self, request: Request, pk: str) -> Response:
        """Where a tool fell out of this recorded selection: from the record, or by
        replaying it exactly (says when an input of that time is missing)."""
        event = self.get_object()
        tool = request.query_params.get("tool", "").strip()
        if not tool:
            raise ValidationError({"tool": ["tool: a tool name is required"]})
        if len(tool) > MAX_TOOL_NAME:
            rule = f"must be at most {MAX_TOOL_NAME} characters"
            raise ValidationError({"tool": [rule]})
        if event.event_type != EventType.SELECTION:
            raise ValidationError({"id": ["id: not a selection event"]})
        return Response(asdict(why_not(event, tool)))
