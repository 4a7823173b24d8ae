"""The audit log over the API: read-only, for compliance and admins."""

from __future__ import annotations

from dataclasses import asdict

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import parse_since, seal_pending, verify_chain
from catalog.permissions import ComplianceReads
from selection.services.why_not import why_not


class AuditEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "event_type",
            "actor_name",
            "request_id",
            "selection_id",
            "catalog_slug",
            "catalog_version",
            "summary",
            "input",
            "output",
            "created",
            "seq",
            "prev_hash",
            "hash",
            "hash_version",
            "key_id",
            "sealed_at",
        ]


class AuditEventViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = AuditEventSerializer
    permission_classes = [ComplianceReads]

    def get_queryset(self) -> QuerySet[AuditEvent]:
        events = AuditEvent.objects.visible_to(self.request.user)
        params = self.request.query_params
        if params.get("event_type"):
            events = events.filter(event_type=params["event_type"])
        if params.get("catalog"):
            events = events.filter(catalog_slug=params["catalog"])
        if params.get("request_id"):
            events = events.filter(request_id=params["request_id"])
        if params.get("selection_id"):
            events = events.filter(selection_id=params["selection_id"])
        return events

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        # Readers see rows sealed; a sealer already at work is not waited for.
        seal_pending(wait=False)
        return super().list(request, *args, **kwargs)

    def retrieve(self, request: Request, *args: object, **kwargs: object) -> Response:
        seal_pending(wait=False)
        return super().retrieve(request, *args, **kwargs)

    @action(detail=False, methods=["get"])
    def verify(self, request: Request) -> Response:
        """Seal, then check the chain against its keys and checkpoints: ok is false
        with the first bad row's id, the kind of damage and what was found."""
        since = request.query_params.get("since")
        try:
            start = parse_since(since) if since else None
        except ValueError as exc:
            raise ValidationError({"since": [str(exc)]}) from exc
        return Response(asdict(verify_chain(since=start, workers=2)))

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
        if event.event_type != EventType.SELECTION:
            raise ValidationError({"id": ["id: not a selection event"]})
        return Response(asdict(why_not(event, tool)))
