"""The audit log over the API: read-only, for compliance and admins."""

from __future__ import annotations

from dataclasses import asdict

from django.db.models import QuerySet
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from audit.models import AuditEvent
from audit.services import verify_chain
from catalog.permissions import ComplianceReads


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
            "prev_hash",
            "hash",
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

    @action(detail=False, methods=["get"])
    def verify(self, request: Request) -> Response:
        """Recompute the hash chain; ok is false with the first bad row's id."""
        return Response(asdict(verify_chain()))
