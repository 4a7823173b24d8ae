"""Catalog API views: parse, check permission, call one service, render."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from catalog import services
from catalog.api import serializers as s
from catalog.counts import Counted, count_tools
from catalog.formats import export_tools
from catalog.lookups import get_catalog_for_user
from catalog.models import Catalog, Tool
from catalog.querysets import ToolQuerySet, catalog_changes
from catalog.services import bulk_edit
from catalog.services.tools import tool_to_spec
from catalog.tool_csv import csv_response
from config.http import request_id
from config.jsonparse import JSONTooDeep, loads_unique
from config.parsers import (
    SafeFormParser,
    SafeJSONParser,
    SafeMultiPartParser,
    refuse_bad_text,
)
from config.ratelimit import ClientRateThrottle, WriteRateThrottle
from identity.access import access_for
from identity.permissions import CuratorWrites
from jobs import services as jobs
from jobs.models import Job

TRUE_VALUES = {"1", "true", "yes"}


@extend_schema_view(
    list=extend_schema(
        description="The catalogs the caller may see, with their tool counts."
    ),
    retrieve=extend_schema(description="One catalog the caller may see."),
    create=extend_schema(
        description="Make a catalog: curators and admins who see every catalog."
    ),
)
class CatalogViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = s.CatalogSerializer
    permission_classes = [CuratorWrites]
    throttle_classes = [WriteRateThrottle]
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Catalog]:
        return Catalog.objects.visible_to(self.request.user).with_counts(
            self.request.user
        )

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # Before any validation: a "slug exists" error would reveal other catalogs.
        if not access_for(request.user).all_catalogs:
            raise PermissionDenied(
                "slug: a caller limited to some catalogs may not create catalogs"
            )
        return super().create(request, *args, **kwargs)

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        serializer.instance = services.create_catalog(
            data["slug"],
            data["name"],
            data.get("description", ""),
            actor=self.request.user,
            request_id=request_id(self.request),
        )

    @extend_schema(
        parameters=[s.ExportQuerySerializer],
        responses={200: OpenApiTypes.ANY},  # a provider's document: list or object
    )
    @action(detail=True, methods=["get"])
    def export(self, request: Request, slug: str) -> HttpResponse:
        """The catalog's tools in one provider format, as a downloadable file."""
        catalog = get_catalog_for_user(request.user, slug)
        query = s.ExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        tools = Tool.objects.visible_to(request.user).filter(catalog=catalog)
        tools = tools.order_by("id")
        if "status" in query.validated_data:
            tools = tools.filter(status=query.validated_data["status"])
        fmt = query.validated_data["format"]
        document = export_tools([tool_to_spec(t) for t in tools], fmt)
        response = HttpResponse(
            json.dumps(document, indent=2), content_type="application/json"
        )
        filename = f"{catalog.slug}-{fmt}.json"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response

    @extend_schema(responses=s.ToolChangeSerializer(many=True))
    @action(detail=True, methods=["get"])
    def changes(self, request: Request, slug: str) -> Response:
        """The catalog's change log, newest first, deleted tools included
        (``?tool=NAME`` for one tool's): curators, compliance and admins."""
        catalog = get_catalog_for_user(request.user, slug)
        if not access_for(request.user).sees_whole_catalog:
            raise PermissionDenied(
                "permission: the change log needs the curator, compliance or admin "
                "scope"
            )
        changes = catalog_changes(catalog, request.query_params.get("tool", ""))
        page = self.paginate_queryset(changes)
        return self.get_paginated_response(s.ToolChangeSerializer(page, many=True).data)

    @extend_schema(
        parameters=[s.ImportQuerySerializer],
        responses={202: s.JobSerializer, 200: s.ImportReportSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="import",
        parser_classes=[SafeJSONParser, SafeMultiPartParser, SafeFormParser],
        throttle_classes=[ClientRateThrottle],
    )
    def import_tools(self, request: Request, slug: str) -> Response:
        """Queue an import of a JSON body or an uploaded ``file``; 202 with the job.
        ``?dry_run=true``: 200 with what each item would become, nothing written."""
        catalog = get_catalog_for_user(request.user, slug)
        params = request.query_params.dict()
        if request.content_type.startswith("multipart/"):
            # An upload's form may carry the options too (the query wins).
            for option in ("format", "names"):
                if not params.get(option) and request.POST.get(option):
                    params[option] = request.POST[option]
        # Every query parameter, so an unknown one is refused by name.
        query = s.ImportQuerySerializer(data=params)
        query.is_valid(raise_exception=True)
        document = _import_document(request)
        options = query.validated_data
        if options["dry_run"]:
            report = services.preview_import(
                catalog,
                document,
                options.get("format"),
                actor=request.user,
                names=options["names"],
            )
            return Response(s.ImportReportSerializer(report).data)
        with jobs.watch_enqueues() as watch:
            job = services.start_import(
                catalog,
                document,
                options.get("format"),
                actor=request.user,
                names=options["names"],
            )
        reader = {"request": request}
        data = with_warning(s.JobSerializer(job, context=reader).data, watch)
        return Response(data, status=status.HTTP_202_ACCEPTED)


def with_warning(data: Any, watch: jobs.EnqueueWatch) -> Any:
    """The saved record, plus a ``warning`` when its background work is delayed."""
    return {**data, "warning": watch.warning} if watch.warning else data


def _import_document(request: Request) -> Any:
    upload = request.FILES.get("file") if request.FILES else None
    if upload is None:
        if request.content_type.startswith("multipart/"):
            raise ValidationError({"file": ["file: an uploaded JSON file is required"]})
        return request.data
    try:
        document = loads_unique(upload.read())
    except JSONTooDeep as exc:
        raise ValidationError({"file": [f"file: {exc}"]}) from exc
    except ValueError as exc:
        raise ValidationError({"file": [f"file: not valid JSON ({exc})"]}) from exc
    refuse_bad_text({"file": document})
    return document


ORDERING = OpenApiParameter(
    "ordering",
    str,
    description="name, catalog, category, status, safety, risk_level, cost, "
    "embedding, updated_at, created_at, version or id; '-' before it for "
    "descending. Anything else is a 400 naming ordering.",
)


@extend_schema_view(list=extend_schema(parameters=[ORDERING]))
class ToolViewSet(viewsets.ModelViewSet):
    """Tools: CRUD with filters; every write goes through catalog.services."""

    serializer_class = s.ToolSerializer
    permission_classes = [CuratorWrites]
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self) -> QuerySet[Tool]:
        tools = Tool.objects.visible_to(self.request.user).select_related(
            "catalog", "created_by", "updated_by"
        )
        tools = tools.filtered(**self._filters())
        return _ordered(tools, self.request.query_params.get("ordering", ""))

    def paginate_queryset(self, queryset: Any) -> Any:
        """A page of tools whose count sums the caller's catalogs' kept counts."""
        if self.action != "list":
            return super().paginate_queryset(queryset)
        access, filters = access_for(self.request.user), self._filters()
        # Counted answers what Django's paginator asks of a queryset (Any: DRF
        # types its argument as a queryset or a sequence).
        counted: Any = Counted(queryset, lambda: count_tools(access, filters))
        return super().paginate_queryset(counted)

    def _filters(self) -> dict[str, Any]:
        params = self.request.query_params
        safe = params.get("safe")
        return {
            "catalog": params.get("catalog", ""),
            "category": params.get("category", ""),
            "status": params.get("status", ""),
            "embedding_status": params.get("embedding_status", ""),
            "tag": params.get("tag", ""),
            "role": params.get("role", ""),
            "safe": safe.lower() in TRUE_VALUES if safe else None,
            "q": params.get("q", ""),
        }

    @extend_schema(request=s.ToolInputSerializer)
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = self._input(request)
        catalog = get_catalog_for_user(request.user, data["catalog"])
        with jobs.watch_enqueues() as watch:
            tool = services.create_tool(
                catalog,
                data["spec"],
                actor=request.user,
                request_id=request_id(request),
                reason=data["reason"],
            )
        body = with_warning(s.ToolSerializer(tool).data, watch)
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.ToolInputSerializer)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        tool = self.get_object()
        data = self._input(request, base=tool if kwargs.get("partial") else None)
        with jobs.watch_enqueues() as watch:
            result = services.update_tool(
                tool,
                data["spec"],
                actor=request.user,
                request_id=request_id(request),
                reason=data["reason"],
            )
        return Response(with_warning(s.ToolSerializer(result.tool).data, watch))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """``?reason=`` (or a JSON body ``{"reason": ...}``) is kept with the change."""
        body = request.data if isinstance(request.data, dict) else {}
        reason = request.query_params.get("reason") or body.get("reason", "")
        services.delete_tool(
            self.get_object(),
            actor=request.user,
            request_id=request_id(request),
            reason=reason,
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[s.ToolExportQuerySerializer, ORDERING],
        responses={(200, "text/csv"): OpenApiTypes.STR},
    )
    @action(detail=False, methods=["get"])
    def export(self, request: Request) -> StreamingHttpResponse:
        """The filtered list (the list's filters and ``ordering``) as CSV: only
        tools the caller may read; cells a spreadsheet would run are text."""
        query = s.ToolExportQuerySerializer(
            data={"format": request.query_params.get("format", "csv")}
        )
        query.is_valid(raise_exception=True)
        return csv_response(self.get_queryset())

    @extend_schema(request=s.ToolBulkSerializer, responses=OpenApiTypes.OBJECT)
    @action(detail=False, methods=["post"])
    def bulk(self, request: Request) -> Response:
        """One change on many tools the caller manages (README, "Bulk edits"):
        200 with the counts, or 202 with the jobs for a large set."""
        body = s.ToolBulkSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        change = bulk_edit.check_change(
            data.get("set"), data.get("delete"), data.get("reason", "")
        )
        tools, field_name = _bulk_set(request, data)
        with jobs.watch_enqueues() as watch:
            result = bulk_edit.bulk_edit(
                tools,
                change,
                actor=request.user,
                field_name=field_name,
                request_id=request_id(request),
            )
        answer: dict[str, Any] = {"total": result.total}
        if "ids" in data:
            answer["not_found"] = len(set(data["ids"])) - result.total
        if not result.jobs:
            answer.update(counts=result.counts, rejected=result.rejected)
            return Response(answer)
        reader = {"request": request}
        answer["jobs"] = [s.JobSerializer(j, context=reader).data for j in result.jobs]
        answer["job"] = result.jobs[0].pk
        return Response(with_warning(answer, watch), status=status.HTTP_202_ACCEPTED)

    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        """Every change record of this tool, newest first."""
        tool = self.get_object()
        changes = tool.changes.all()
        page = self.paginate_queryset(changes)
        data = s.ToolChangeSerializer(page, many=True).data
        return self.get_paginated_response(data)

    def _input(self, request: Request, base: Tool | None = None) -> dict[str, Any]:
        payload = request.data
        if base is not None and isinstance(payload, dict):
            payload = {**tool_to_spec(base).to_dict(), **payload}
            payload.pop("catalog", None)
        serializer = s.ToolInputSerializer(data=payload)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


def _ordered(tools: ToolQuerySet, ordering: str) -> ToolQuerySet:
    if not ordering:
        return tools.order_by("catalog__slug", "id")
    try:
        return tools.sorted_by(ordering)
    except ValueError as exc:
        raise ValidationError({"ordering": [str(exc)]}) from exc


def _bulk_set(request: Request, data: dict[str, Any]) -> tuple[ToolQuerySet, str]:
    """The tools a bulk body names, and the field that named them."""
    managed = Tool.objects.managed_by(request.user)
    if "ids" in data:
        return managed.filter(pk__in=data["ids"]), "ids"
    wanted = {k: v for k, v in data["filter"].items() if v not in ("", None)}
    return managed.filtered(**wanted), "filter"


@extend_schema_view(
    list=extend_schema(
        description="Imports and re-indexes the caller may see, newest first "
        "(``?catalog=``)."
    ),
    retrieve=extend_schema(
        description="One job: state, progress, counts and the items the caller may see."
    ),
)
class JobViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = s.JobSerializer
    permission_classes = [CuratorWrites]

    def get_queryset(self) -> QuerySet[Job]:
        jobs = Job.objects.visible_to(self.request.user).select_related("catalog")
        if self.request.query_params.get("catalog"):
            jobs = jobs.filter(catalog__slug=self.request.query_params["catalog"])
        return jobs
