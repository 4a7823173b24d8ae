"""Sources API: parse, check access (sources.querysets), call one service, render.

Admins only: a caller who cannot see the catalog gets 404, any other non-admin 403.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.api.serializers import JobSerializer
from config.http import request_id
from config.ratelimit import WriteRateThrottle
from jobs import services as jobs
from sources import services
from sources.api.serializers import (
    SourceAddedSerializer,
    SourceInputSerializer,
    SourceSerializer,
)
from sources.models import Source
from sources.querysets import get_source_for_user, sources_of
from sources.upstream import check_connection

ConnectionSerializer = inline_serializer(
    "SourceConnection",
    {
        "ok": serializers.BooleanField(),
        "reason": serializers.CharField(),
        "server": serializers.CharField(required=False),
        "tools_on_first_page": serializers.IntegerField(required=False),
        "more_pages": serializers.BooleanField(required=False),
    },
)


class CatalogSourceList(generics.ListCreateAPIView):
    """A catalog's sources; POST adds one (201 with its id)."""

    serializer_class = SourceSerializer
    permission_classes = [IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self) -> QuerySet[Source]:
        return sources_of(self.request.user, self.kwargs["slug"])[1]

    @extend_schema(
        request=SourceInputSerializer, responses={201: SourceAddedSerializer}
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Add a source; its first sync is queued (``sync_job``, to follow at
        ``GET /api/v1/jobs/{id}``)."""
        catalog, _sources = sources_of(request.user, kwargs["slug"])
        given = SourceInputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        with jobs.watch_enqueues() as watch:
            added = services.create_source(
                catalog,
                **given.validated_data,
                actor=request.user,
                request_id=request_id(request),
            )
        data = dict(SourceSerializer(added.source).data)
        job = JobSerializer(added.sync_job, context={"request": request})
        data["sync_job"] = job.data
        if watch.warning:
            data["warning"] = watch.warning
        return Response(data, status=status.HTTP_201_CREATED)


class SourceViewSet(viewsets.GenericViewSet):
    """One source: read, edit (url, headers, limits), delete, sync, test."""

    serializer_class = SourceSerializer
    permission_classes = [IsAuthenticated]
    throttle_classes = [WriteRateThrottle]
    queryset = Source.objects.none()

    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(SourceSerializer(get_source_for_user(request.user, pk)).data)

    @extend_schema(request=SourceInputSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        source = get_source_for_user(request.user, pk)
        given = SourceInputSerializer(data=request.data, partial=True)
        given.is_valid(raise_exception=True)
        updated = services.update_source(
            source,
            dict(given.validated_data),
            actor=request.user,
            request_id=request_id(request),
        )
        data = dict(SourceSerializer(updated.source).data)
        if updated.headers_dropped:
            data["warning"] = services.dropped_warning(updated.headers_dropped)
        return Response(data)

    def destroy(self, request: Request, pk: str) -> Response:
        services.delete_source(
            get_source_for_user(request.user, pk),
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={202: JobSerializer})
    @action(detail=True, methods=["post"])
    def sync(self, request: Request, pk: str) -> Response:
        """Queue a sync now; 202 with the job (the one already waiting, if any)."""
        source = get_source_for_user(request.user, pk)
        with jobs.watch_enqueues() as watch:
            job = services.start_sync(source, actor=request.user)
        data = dict(JobSerializer(job, context={"request": request}).data)
        if watch.warning:
            data["warning"] = watch.warning
        return Response(data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: ConnectionSerializer})
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str) -> Response:
        """Initialize and list the first page of tools: ok, or the reason."""
        return Response(check_connection(get_source_for_user(request.user, pk)))
