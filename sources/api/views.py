"""Sources API: catalog.api.owned's list, read, edit and delete (access, rate
limit) with the sources' serializers and services, and a source's sync and test.

Admins only: a caller who cannot see the catalog gets 404, any other non-admin 403.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.api.owned import OwnedList, OwnedViewSet
from catalog.api.serializers import JobSerializer
from catalog.models import Catalog
from jobs import services as jobs
from sources import services
from sources.api.serializers import (
    SourceAddedSerializer,
    SourceInputSerializer,
    SourceSerializer,
)
from sources.models import Source
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


@extend_schema_view(
    post=extend_schema(
        description="Add a source; its first sync is queued (``sync_job``, to "
        "follow at\n``GET /api/v1/jobs/{id}``).",
        request=SourceInputSerializer,
        responses={201: SourceAddedSerializer},
    )
)
class CatalogSourceList(OwnedList):
    """A catalog's sources; POST adds one (201 with its id)."""

    model = Source
    serializer_class = SourceSerializer
    input_serializer = SourceInputSerializer

    def add(self, catalog: Catalog, data: dict[str, Any]) -> Response:
        with jobs.watch_enqueues() as watch:
            added = services.create_source(
                catalog,
                **data,
                actor=self.request.user,
                request_id=self.request_id(),
            )
        answer = dict(SourceSerializer(added.source).data)
        job = JobSerializer(added.sync_job, context={"request": self.request})
        answer["sync_job"] = job.data
        if watch.warning:
            answer["warning"] = watch.warning
        return Response(answer, status=status.HTTP_201_CREATED)


@extend_schema_view(partial_update=extend_schema(request=SourceInputSerializer))
class SourceViewSet(OwnedViewSet):
    """One source: read, edit (url, headers, limits), delete, sync, test."""

    model = Source
    serializer_class = SourceSerializer
    input_serializer = SourceInputSerializer
    delete_service = services.delete_source

    def edit(self, found: Source, changes: dict[str, Any]) -> Response:
        updated = services.update_source(
            found, changes, actor=self.request.user, request_id=self.request_id()
        )
        answer = dict(SourceSerializer(updated.source).data)
        if updated.headers_dropped:
            answer["warning"] = services.dropped_warning(updated.headers_dropped)
        return Response(answer)

    @extend_schema(request=None, responses={202: JobSerializer})
    @action(detail=True, methods=["post"])
    def sync(self, request: Request, pk: str) -> Response:
        """Queue a sync now; 202 with the job (the one already waiting, if any)."""
        source = self.get_object()
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
        return Response(check_connection(self.get_object()))
