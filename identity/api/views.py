"""API keys over the API (admins): list, create, change, revoke, rotate; each audited.

A caller sees and manages only the keys within it (``identity.access.key_within``):
any other key is a 404, like an unknown one; asking to make or change a key into
one bigger than the caller is a 403 naming the field."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from config.http import request_id
from config.ratelimit import WriteRateThrottle
from config.strict import StrictFieldsMixin
from identity.access import ALL_CATALOGS, access_for, keys_within
from identity.api.fields import CatalogsField
from identity.choices import ApiScope
from identity.models import ApiClient
from identity.permissions import AdminOnly
from identity.services.clients import (
    CATALOGS_RULE,
    change_api_client,
    create_api_client,
    person_named,
    revoke_api_client,
    rotate_api_client,
)


class KeyCatalogsField(CatalogsField):
    """A key's catalogs: an empty list is refused as the service words it."""

    empty = CATALOGS_RULE


class ApiClientSerializer(serializers.ModelSerializer):
    owner = serializers.SerializerMethodField()
    person = serializers.CharField(source="person_name", read_only=True)  # type: ignore[assignment]
    parent = serializers.CharField(source="parent_name", read_only=True)  # type: ignore[assignment]
    catalogs = serializers.SerializerMethodField()

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
            "parent",
            "person",
            "key_prefix",
            "created",
            "last_used",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.STR)
    def get_owner(self, client: ApiClient) -> str:
        """Who made the key, by their name now (the name kept at its making once
        they are deleted): the link is the id, the name is for reading."""
        if client.owner is not None:
            return str(client.owner.get_username())
        return client.owner_name

    @extend_schema_field(OpenApiTypes.ANY)
    def get_catalogs(self, client: ApiClient) -> Any:
        return ALL_CATALOGS if client.all_catalogs else list(client.catalogs)


class StrictSerializer(StrictFieldsMixin, serializers.Serializer):
    """Refuses a field it does not know, naming it (config.strict)."""


class ApiClientChangeSerializer(StrictSerializer):
    roles = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=100
    )
    catalogs = KeyCatalogsField(required=False)
    allow_unsafe = serializers.BooleanField(required=False)
    expires = serializers.DateTimeField(required=False, allow_null=True)
    rate_limit_per_minute = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=1_000_000
    )


class ApiClientInputSerializer(ApiClientChangeSerializer):
    name = serializers.RegexField(r"^[A-Za-z0-9_.-]{1,100}$")
    scope = serializers.ChoiceField(choices=ApiScope.choices)
    # The username of the person the key acts for (bounded by them, named in
    # the audit); omitted: a key of its own.
    person = serializers.CharField(required=False, max_length=150)


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
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self) -> QuerySet[ApiClient]:
        keys = ApiClient.objects.select_related("owner").order_by("name")
        if getattr(self, "swagger_fake_view", False):  # the schema: no caller
            return keys.none()
        return keys_within(access_for(self.request.user), keys)

    @extend_schema(
        request=ApiClientInputSerializer, responses=ApiClientWithKeySerializer
    )
    def create(self, request: Request) -> Response:
        data = ApiClientInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields: dict[str, Any] = dict(data.validated_data)
        if "person" in fields:
            fields["person"] = person_named(fields["person"])
        client, key = create_api_client(
            fields.pop("name"),
            fields.pop("scope"),
            fields.pop("roles", None),
            fields.pop("catalogs", None),
            actor=request.user,
            request_id=request_id(request),
            **fields,
        )
        return _with_key(client, key, status.HTTP_201_CREATED)

    @extend_schema(request=ApiClientChangeSerializer, responses=ApiClientSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        data = ApiClientChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        client = change_api_client(
            self.get_object(),
            actor=request.user,
            request_id=request_id(request),
            **data.validated_data,
        )
        return Response(ApiClientSerializer(client).data)

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
