"""Labels, evaluations and confusable tools of a catalog over the API: parse,
check access (identity.access), call one service, render.

A catalog the caller may not see is a 404; one it sees without the scope is a
403 (agents: always; compliance: for writes)."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import generics, permissions, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.lookups import get_labels_catalog
from catalog.models import Catalog
from config.http import request_id
from config.params import MAX_ID
from config.ratelimit import WriteRateThrottle
from config.strict import StrictFieldsMixin
from learning.confusable import DEFAULT_THRESHOLD, confusable_pairs
from learning.models import Evaluation, Label, LabelOrigin, LabelStatus
from learning.services import evaluations, labels, proposals
from selection.registry import EvaluationInputError


def catalog_for(request: Request, slug: str, *, manage: bool) -> Catalog:
    return get_labels_catalog(request.user, slug, manage=manage)


def choice_param(request: Request, name: str, choices: list[str]) -> str:
    value = request.query_params.get(name, "")
    if value and value not in choices:
        raise ValidationError({name: [f"{name}: must be one of {', '.join(choices)}"]})
    return value


def paged(name: str, item: Any) -> Any:
    """The schema of a page of ``item`` (BoundedPagination's shape)."""
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(),
            "next": serializers.CharField(allow_null=True),
            "previous": serializers.CharField(allow_null=True),
            "results": item,
        },
    )


def counted(name: str, key: str) -> Any:
    return inline_serializer(name, {key: serializers.IntegerField()})


LABEL_FILTERS = [
    OpenApiParameter("status", str, enum=LabelStatus.values),
    OpenApiParameter("origin", str, enum=LabelOrigin.values),
]
PAGE = OpenApiParameter("page", int)


class LabelSerializer(serializers.ModelSerializer):
    class Meta:
        model = Label
        fields = ["id", "query", "messages", "tools", "origin", "status",
                  "selection_id", "created"]  # fmt: skip


class LabelUploadSerializer(StrictFieldsMixin, serializers.Serializer):
    """Only the top level: each item is checked on its own by the service."""

    # No per-item field: each item is checked by the service (10,000 JSONFields
    # cost more than the whole upload).
    labels = serializers.ListField()

    def validate_labels(self, value: list[Any]) -> list[Any]:
        if len(value) > labels.MAX_LABELS:
            raise serializers.ValidationError(
                f"labels: at most {labels.MAX_LABELS} a request; this one has "
                f"{len(value)}"
            )
        return value


class LabelListView(generics.GenericAPIView):
    """GET the catalog's labels (paged, ``?status=``, ``?origin=``); POST up to
    10,000 (each refused item named with its reason, the rest kept); DELETE
    every label matching ``?status=`` / ``?origin=``, or all with ``?all=true``."""

    serializer_class = LabelSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    def filters(self) -> dict[str, str]:
        return {
            "status": choice_param(self.request, "status", LabelStatus.values),
            "origin": choice_param(self.request, "origin", LabelOrigin.values),
        }

    @extend_schema(
        operation_id="v1_catalogs_labels_list",
        parameters=[*LABEL_FILTERS, PAGE],
        responses=paged("LabelPage", LabelSerializer(many=True)),
    )
    def get(self, request: Request, slug: str) -> Response:
        catalog = catalog_for(request, slug, manage=False)
        page = self.paginate_queryset(labels.labels_of(catalog, **self.filters()))
        return self.get_paginated_response(LabelSerializer(page, many=True).data)

    @extend_schema(
        request=LabelUploadSerializer,
        responses={
            201: inline_serializer(
                "LabelUploadResult",
                {
                    "added": serializers.IntegerField(),
                    "refused_count": serializers.IntegerField(),
                    "refused": serializers.ListField(child=serializers.DictField()),
                },
            )
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        catalog = catalog_for(request, slug, manage=True)
        body = LabelUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = labels.add_labels(
            catalog,
            body.validated_data["labels"],
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(upload.to_dict(), status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="v1_catalogs_labels_bulk_destroy",
        parameters=[*LABEL_FILTERS, OpenApiParameter("all", bool)],
        responses=counted("LabelsDeleted", "deleted"),
    )
    def delete(self, request: Request, slug: str) -> Response:
        catalog = catalog_for(request, slug, manage=True)
        found = self.filters()
        everything = request.query_params.get("all", "").lower() in ("1", "true")
        if not any(found.values()) and not everything:
            raise ValidationError(
                {"all": ["all: give ?all=true to delete every label, or a filter"]}
            )
        deleted = labels.delete_labels(
            catalog,
            actor=request.user,
            request_id=request_id(request),
            status=found["status"],
            origin=found["origin"],
        )
        return Response({"deleted": deleted})


class LabelDetailView(generics.GenericAPIView):
    """GET or DELETE one label of the catalog."""

    serializer_class = LabelSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    def get(self, request: Request, slug: str, label_id: int) -> Response:
        catalog = catalog_for(request, slug, manage=False)
        label = Label.objects.filter(catalog=catalog, pk=min(label_id, MAX_ID)).first()
        if label is None:
            raise Http404(f"label: no label {label_id} in {slug!r}")
        return Response(LabelSerializer(label).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, slug: str, label_id: int) -> Response:
        catalog = catalog_for(request, slug, manage=True)
        if label_id > MAX_ID or not labels.delete_labels(
            catalog,
            actor=request.user,
            label_id=label_id,
            request_id=request_id(request),
        ):
            raise Http404(f"label: no label {label_id} in {slug!r}")
        return Response(status=status.HTTP_204_NO_CONTENT)


class ReviewSerializer(StrictFieldsMixin, serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        max_length=labels.MAX_LABELS,
    )
    status = serializers.ChoiceField(
        choices=[LabelStatus.ACCEPTED.value, LabelStatus.REJECTED.value]
    )


class LabelReviewView(generics.GenericAPIView):
    """Accept or reject proposed labels (others are left as they are)."""

    serializer_class = ReviewSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    @extend_schema(responses=counted("LabelsReviewed", "changed"))
    def post(self, request: Request, slug: str) -> Response:
        catalog = catalog_for(request, slug, manage=True)
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        changed = labels.review_labels(
            catalog,
            body.validated_data["ids"],
            body.validated_data["status"],
            actor=request.user,
            request_id=request_id(request),
        )
        return Response({"changed": changed})


class LabelProposalsView(generics.GenericAPIView):
    """Look for labels in recent use now (the periodic task does it too)."""

    serializer_class = serializers.Serializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    @extend_schema(request=None, responses=counted("LabelsProposed", "proposed"))
    def post(self, request: Request, slug: str) -> Response:
        catalog = catalog_for(request, slug, manage=True)
        found = proposals.find_proposals(
            catalog, actor=request.user, request_id=request_id(request)
        )
        return Response({"proposed": found})


class EvaluationSerializer(serializers.ModelSerializer):
    progress = serializers.IntegerField(source="percent", read_only=True)
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True
    )
    misses = serializers.SerializerMethodField()

    class Meta:
        model = Evaluation
        fields = ["id", "state", "source", "settings_version", "settings_data",
                  "catalog_version", "total", "done", "progress", "metrics",
                  "error", "created_by", "created", "started", "finished",
                  "misses"]  # fmt: skip

    @extend_schema_field(OpenApiTypes.INT)
    def get_misses(self, run: Evaluation) -> int:
        return sum(1 for row in run.rows if row.get("miss"))


class EvaluationDetailSerializer(EvaluationSerializer):
    """(schema only) a run with a page of its requests."""

    rows_count = serializers.IntegerField()
    rows = serializers.ListField(child=serializers.DictField())

    class Meta(EvaluationSerializer.Meta):
        fields = [*EvaluationSerializer.Meta.fields, "rows_count", "rows"]


class EvaluationInputSerializer(StrictFieldsMixin, serializers.Serializer):
    labels = serializers.ListField(child=serializers.JSONField(), required=False)
    settings = serializers.JSONField(required=False)

    def validate_labels(self, value: list[Any]) -> list[Any]:
        if not value or len(value) > labels.MAX_LABELS:
            raise serializers.ValidationError(
                f"labels: from 1 to {labels.MAX_LABELS} labels inline"
            )
        return value


class EvaluationListView(generics.GenericAPIView):
    """GET the catalog's runs, newest first (paged); POST queues one (202)."""

    serializer_class = EvaluationSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    @extend_schema(
        operation_id="v1_catalogs_evaluations_list",
        parameters=[PAGE],
        responses=paged("EvaluationPage", EvaluationSerializer(many=True)),
    )
    def get(self, request: Request, slug: str) -> Response:
        catalog = catalog_for(request, slug, manage=False)
        runs = Evaluation.objects.filter(catalog=catalog).order_by("-id")
        page = self.paginate_queryset(runs.select_related("created_by"))
        return self.get_paginated_response(EvaluationSerializer(page, many=True).data)

    @extend_schema(
        request=EvaluationInputSerializer, responses={202: EvaluationSerializer}
    )
    def post(self, request: Request, slug: str) -> Response:
        catalog = catalog_for(request, slug, manage=True)
        body = EvaluationInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            run = evaluations.start_evaluation(
                catalog,
                actor=request.user,
                labels=data.get("labels"),
                settings_data=data.get("settings"),
            )
        except EvaluationInputError as exc:
            raise ValidationError(exc.errors) from exc
        return Response(EvaluationSerializer(run).data, status=status.HTTP_202_ACCEPTED)


def evaluation_for(request: Request, slug: str, run_id: int) -> Evaluation:
    catalog = catalog_for(request, slug, manage=False)
    run = Evaluation.objects.filter(catalog=catalog, pk=min(run_id, MAX_ID)).first()
    if run is None:
        raise Http404(f"evaluation: no evaluation {run_id} of {slug!r}")
    return run


def rows_with_links(run: Evaluation, rows: list[dict[str, Any]]) -> list[Any]:
    """Each row with the console link to each expected tool's why-not."""
    out = []
    for row in rows:
        url = reverse(
            "learning:evaluation-row", args=[run.catalog.slug, run.pk, row["index"]]
        )
        expected = [{**e, "why_not_url": f"{url}#{e['tool']}"} for e in row["expected"]]
        out.append({**row, "expected": expected})
    return out


class EvaluationDetailView(generics.GenericAPIView):
    """One run: its metrics and progress, and its requests (``?misses=true``
    for the misses only), paged with ``?page=``."""

    serializer_class = EvaluationSerializer
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        parameters=[PAGE, OpenApiParameter("misses", bool)],
        responses=EvaluationDetailSerializer,
    )
    def get(self, request: Request, slug: str, run_id: int) -> Response:
        run = evaluation_for(request, slug, run_id)
        rows = run.rows
        if request.query_params.get("misses", "").lower() in ("1", "true"):
            rows = [row for row in rows if row.get("miss")]
        page = self.paginate_queryset(rows)  # type: ignore[arg-type]
        body = {
            **EvaluationSerializer(run).data,
            "rows_count": len(rows),
            "rows": rows_with_links(run, list(page or [])),
        }
        return Response(body)


class ConfusableView(generics.GenericAPIView):
    """Tool pairs the ranking confuses: from the latest finished evaluation's
    misses, and tools whose texts nearly coincide (``?threshold=``, cosine)."""

    serializer_class = serializers.Serializer
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        parameters=[OpenApiParameter("threshold", float)],
        responses=inline_serializer(
            "ConfusablePairs",
            {
                "evaluation": serializers.IntegerField(allow_null=True),
                "threshold": serializers.FloatField(),
                "pairs": serializers.ListField(child=serializers.DictField()),
            },
        ),
    )
    def get(self, request: Request, slug: str) -> Response:
        catalog = catalog_for(request, slug, manage=False)
        return Response(confusable_pairs(catalog, threshold=threshold_param(request)))


def threshold_param(request: Any) -> float:
    text = request.GET.get("threshold", "") if hasattr(request, "GET") else ""
    if not text:
        return DEFAULT_THRESHOLD
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.5 <= value <= 1.0:
        raise ValidationError({"threshold": ["threshold: a number from 0.5 to 1"]})
    return value
