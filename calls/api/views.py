"""Approvals over the API: list and read them, approve or deny a pending one.

Who sees and decides what is ``identity.access``'s: people with the approval
permission (the approver and admin groups) decide within their catalogs, never
on their own request; compliance reads; an API key never lists approvals and may
read only its own request's by id (any other id is a 404, like an unknown one).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from calls.decisions import MAX_REASON, approve, deny
from calls.models import Approval, ApprovalStatus
from config.http import request_id
from config.ratelimit import WriteRateThrottle
from config.strict import StrictFieldsMixin
from identity.access import (
    APPROVALS_PERMISSION_RULE,
    access_for,
    approvals_visible_to,
    reads_approvals,
)

HEX = "[0-9a-fA-F]"
UUID_PATTERN = f"{HEX}{{8}}-?{HEX}{{4}}-?{HEX}{{4}}-?{HEX}{{4}}-?{HEX}{{12}}"


class ApprovalReads(permissions.BasePermission):
    """Listing needs a person who reads approvals; one approval by id is open to
    any signed-in caller (scoping makes anything else a 404); deciding is
    checked by the decision itself (calls.decisions, a 403 naming the rule)."""

    message = (
        "permission: listing approvals needs the approver, compliance or admin group"
    )

    def has_permission(self, request: Request, view: Any) -> bool:
        access = access_for(request.user)
        if not access.signed_in:
            return False
        if getattr(view, "action", None) == "list":
            return reads_approvals(access)
        return True


class ApprovalSerializer(serializers.ModelSerializer):
    catalog = serializers.CharField(source="catalog.slug", read_only=True)
    requester = serializers.CharField(source="requester_name", read_only=True)
    decider = serializers.CharField(source="decider_name", read_only=True)

    class Meta:
        model = Approval
        fields = [
            "id",
            "status",
            "catalog",
            "tool_name",
            "tool_version",
            "arguments",
            "arguments_hash",
            "requester",
            "selection_id",
            "request_id",
            "decider",
            "reason",
            "created",
            "decided",
            "expires",
            "used",
        ]
        read_only_fields = fields


class DecisionSerializer(StrictFieldsMixin, serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=MAX_REASON, trim_whitespace=True
    )


class StatusFilter(forms.Form):
    status = forms.ChoiceField(required=False, choices=ApprovalStatus.choices)


STATUS_PARAMETER = OpenApiParameter(
    "status", str, enum=list(ApprovalStatus.values), description="only this status"
)
KNOWN_PARAMETERS = frozenset({"status", "page"})
NOT_A_FILTER = "not a filter of approvals"
STATUS_RULE = f"must be one of {', '.join(ApprovalStatus.values)}"


class ApprovalViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Tool calls waiting for (or decided by) a person, newest first."""

    serializer_class = ApprovalSerializer
    permission_classes = [ApprovalReads]
    throttle_classes = [WriteRateThrottle]  # a decision costs 1; reads nothing
    lookup_value_regex = UUID_PATTERN

    def get_queryset(self) -> QuerySet[Approval]:
        rows = Approval.objects.select_related("catalog").order_by("-created", "id")
        if getattr(self, "swagger_fake_view", False):  # the schema: no caller
            return rows.none()
        return approvals_visible_to(self.request.user, rows)

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.action != "list":
            return queryset
        params = self.request.query_params
        unknown = sorted(set(params) - KNOWN_PARAMETERS)
        if unknown:
            raise ValidationError({name: [NOT_A_FILTER] for name in unknown})
        form = StatusFilter(params)
        if not form.is_valid():
            raise ValidationError({"status": [STATUS_RULE]})
        status = form.cleaned_data["status"]
        return queryset.filter(status=status) if status else queryset

    @extend_schema(parameters=[STATUS_PARAMETER])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=DecisionSerializer, responses=ApprovalSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        approval = self._decidable()
        row = approve(
            approval,
            person=request.user,
            reason=self._reason(request),
            request_id=request_id(request),
        )
        return Response(ApprovalSerializer(row).data)

    @extend_schema(request=DecisionSerializer, responses=ApprovalSerializer)
    @action(detail=True, methods=["post"])
    def deny(self, request: Request, pk: str) -> Response:
        approval = self._decidable()
        row = deny(
            approval,
            person=request.user,
            reason=self._reason(request),
            request_id=request_id(request),
        )
        return Response(ApprovalSerializer(row).data)

    def _reason(self, request: Request) -> str:
        data = DecisionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return str(data.validated_data.get("reason", ""))

    def _decidable(self) -> Approval:
        """The approval, if the caller may see it (else 404); a caller who may
        see it but not decide is refused by the decision (403 naming why)."""
        access = access_for(self.request.user)
        if not access.is_key and not reads_approvals(access):
            self.permission_denied(self.request, message=APPROVALS_PERMISSION_RULE)
        return self.get_object()
