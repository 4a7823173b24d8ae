"""The review queue over the API: tool definitions waiting for a decision (a
source's changed or new tool, a definition screening flagged), each with the
side-by-side diff, and the decisions (``catalog.services.pinning``).

Read by whoever sees whole catalogs (curators, compliance, admins; a review
shows definitions an agent is never offered); decided by curators and admins.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.choices import ReviewState
from catalog.models import ToolReview
from catalog.pinning import diff_rows
from catalog.services import pinning
from config.http import request_id
from config.ratelimit import WriteRateThrottle
from config.strict import StrictFieldsMixin
from identity.access import access_for
from screening.rules import explain


class ReviewAccess(permissions.BasePermission):
    """Whole-catalog readers read; curators and admins decide."""

    message = pinning.READERS

    def has_permission(self, request: Request, view: Any) -> bool:
        access = access_for(request.user)
        if request.method in permissions.SAFE_METHODS:
            return access.sees_whole_catalog
        self.message = pinning.DECIDERS
        return access.can_write


class FindingSerializer(serializers.Serializer):
    rule = serializers.CharField()
    kind = serializers.CharField(source="class")
    where = serializers.CharField()
    excerpt = serializers.CharField(required=False)
    explanation = serializers.SerializerMethodField()

    def get_explanation(self, finding: dict[str, Any]) -> str:
        return explain(finding["rule"])


class ToolReviewSerializer(serializers.ModelSerializer):
    catalog = serializers.CharField(source="catalog.slug")
    tool = serializers.CharField(source="tool_name")
    findings = FindingSerializer(many=True)
    returns_to = serializers.CharField(source="status_before")

    class Meta:
        model = ToolReview
        fields = [
            "id",
            "catalog",
            "tool",
            "tool_id",
            "kind",
            "state",
            "origin",
            "findings",
            "risks",
            "suspended",
            "returns_to",
            "served_hash",
            "proposed_hash",
            "diff_hash",
            "created",
            "decided",
            "decider_name",
            "reason",
        ]


class DiffRowSerializer(serializers.Serializer):
    path = serializers.CharField()
    before = serializers.CharField(allow_null=True)
    after = serializers.CharField(allow_null=True)
    changed = serializers.BooleanField()


class ToolReviewDetailSerializer(ToolReviewSerializer):
    """A review with both definitions and the diff between them, row by row."""

    diff = serializers.SerializerMethodField()

    class Meta(ToolReviewSerializer.Meta):
        fields = [*ToolReviewSerializer.Meta.fields, "served", "proposed", "diff"]

    @extend_schema_field(DiffRowSerializer(many=True))
    def get_diff(self, review: ToolReview) -> list[dict[str, Any]]:
        return diff_rows(review.served, review.proposed)


class ReviewDecisionSerializer(StrictFieldsMixin, serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=500
    )


STATES = [state.value for state in ReviewState]


@extend_schema_view(
    list=extend_schema(
        description=(
            "Tool definitions waiting for review (``state=pending``, the default) "
            "or decided, newest first, in the catalogs the caller may see."
        ),
        parameters=[
            OpenApiParameter("catalog", OpenApiTypes.STR, description="Catalog slug"),
            OpenApiParameter(
                "state", OpenApiTypes.STR, enum=[*STATES, "all"], description="State"
            ),
            OpenApiParameter("tool", OpenApiTypes.STR, description="Tool name"),
        ],
    ),
    retrieve=extend_schema(
        description="One review with the served and proposed definitions side by side."
    ),
)
class ToolReviewViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [ReviewAccess]
    throttle_classes = [WriteRateThrottle]
    # Plain digits within a bigint: any other id is a 404 before any query.
    lookup_value_regex = "[0-9]{1,18}"

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        if self.action == "list":
            return ToolReviewSerializer
        return ToolReviewDetailSerializer

    def get_queryset(self) -> QuerySet[ToolReview]:
        reviews = ToolReview.objects.visible_to(self.request.user).select_related(
            "catalog"
        )
        if self.action != "list":
            return reviews
        params = self.request.query_params
        state = params.get("state", ReviewState.PENDING)
        if state not in (*STATES, "all"):
            raise serializers.ValidationError(
                {"state": [f"state: one of {', '.join([*STATES, 'all'])}"]}
            )
        if state != "all":
            reviews = reviews.filter(state=state)
        if params.get("catalog"):
            reviews = reviews.filter(catalog__slug=params["catalog"])
        if params.get("tool"):
            reviews = reviews.filter(tool_name=params["tool"])
        return reviews.order_by("-id")

    def _decide(self, request: Request, verb: Any) -> Response:
        given = ReviewDecisionSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        review = self.get_object()
        row = verb(
            review,
            actor=request.user,
            reason=given.validated_data["reason"],
            request_id=request_id(request),
        )
        return Response(ToolReviewDetailSerializer(row).data)

    @extend_schema(
        request=ReviewDecisionSerializer,
        responses=ToolReviewDetailSerializer,
        description=(
            "Approve the definition: a source's change becomes the tool's, a new "
            "tool enters service. Refused (400) when screening flagged it: allow it."
        ),
    )
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, pinning.approve_change)

    @extend_schema(
        request=ReviewDecisionSerializer,
        responses=ToolReviewDetailSerializer,
        description="Allow a definition screening flagged; the reason is required.",
    )
    @action(detail=True, methods=["post"])
    def allow(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, pinning.allow_flagged)

    @extend_schema(
        request=ReviewDecisionSerializer,
        responses=ToolReviewDetailSerializer,
        description=(
            "Refuse the definition: a change is dropped (the pinned definition "
            "stays), a new or flagged tool is disabled. The reason is required."
        ),
    )
    @action(detail=True, methods=["post"])
    def refuse(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, pinning.refuse_change)
