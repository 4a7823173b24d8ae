"""API keys over the API (admins): list, create, revoke, rotate; each is audited."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.choices import ApiScope
from catalog.models import ApiClient
from catalog.permissions import AdminOnly
from catalog.services.clients import (
    create_api_client,
    revoke_api_client,
    rotate_api_client,
)
from config.http import request_id
from config.strict import StrictFieldsMixin


class ApiClientSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(
        source="owner.username", default=None, read_only=True, allow_null=True
    )

    class Meta:
        model = ApiClient
        fields = [
            "id",
            "name",
            "scope",
            "roles",
            "catalogs",
            "allow_unsafe",
            "rate_limit_per_minute",
            "expires",
            "revoked",
            "owner",
            "key_prefix",
            "created",
            "last_used",
        ]
        read_only_fields = fields


class ApiClientInputSerializer(StrictFieldsMixin, serializers.Serializer):
    name = serializers.RegexField(r"^[A-Za-z0-9_.-]{1,100}$")
    scope = serializers.ChoiceField(choices=ApiScope.choices)
    roles = serializers.ListField(
        child=serializers.CharField(max_length=100), default=list, max_length=100
    )
    catalogs = serializers.ListField(
        child=serializers.SlugField(), default=list, max_length=1000
    )
    allow_unsafe = serializers.BooleanField(default=False)
    expires = serializers.DateTimeField(required=False, allow_null=True)
    rate_limit_per_minute = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=1_000_000
    )


class ApiClientWithKeySerializer(ApiClientSerializer):
    key = serializers.CharField(read_only=True)

    class Meta(ApiClientSerializer.Meta):
        fields = [*ApiClientSerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiClientViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """API keys; the key itself is shown once, when it is made or rotated."""

    serializer_class = ApiClientSerializer
    permission_classes = [AdminOnly]

    def get_queryset(self) -> QuerySet[ApiClient]:
        return ApiClient.objects.select_related("owner").order_by("name")

    @extend_schema(
        request=ApiClientInputSerializer, responses=ApiClientWithKeySerializer
    )
    def create(self, request: Request) -> Response:
        data = ApiClientInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields: dict[str, Any] = dict(data.validated_data)
        client, key = create_api_client(
            fields.pop("name"),
            fields.pop("scope"),
            fields.pop("roles"),
            fields.pop("catalogs"),
            actor=request.user,
            request_id=request_id(request),
            **fields,
        )
        return _with_key(client, key, status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=ApiClientSerializer)
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str) -> Response:
        client = revoke_api_client(
            self.get_object(), actor=request.user, request_id=request_id(request)
        )
        return Response(ApiClientSerializer(client).data)

    @extend_schema(request=None, responses=ApiClientWithKeySerializer)
    @action(detail=True, methods=["post"])
    def rotate(self, request: Request, pk: str) -> Response:
        client, key = rotate_api_client(
            self.get_object(), actor=request.user, request_id=request_id(request)
        )
        return _with_key(client, key, status.HTTP_200_OK)


def _with_key(client: ApiClient, key: str, code: int) -> Response:
    body = dict(ApiClientSerializer(client).data)
    body["key"] = key
    return Response(body, status=code)
