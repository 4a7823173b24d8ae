"""The sign-in settings over the API (admins): the claim mapping and the password
switch; every change audited by ``sso.services.mappings``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.http import request_id
from config.ratelimit import WriteRateThrottle
from sso.api.serializers import (
    ALL_CATALOGS,
    ClaimMappingSerializer,
    MappingChangeSerializer,
    MappingInputSerializer,
    SignInPolicySerializer,
)
from sso.models import ClaimMapping
from sso.people import access_of
from sso.policy import console_switch, password_login_on, sso_on
from sso.services.mappings import (
    create_mapping,
    delete_mapping,
    mappings_visible_to,
    set_password_login,
    update_mapping,
)


class AdminOnly(permissions.BasePermission):
    message = "permission: managing sign-in needs the admin scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        return access_of(request.user).is_admin


def _catalogs(value: Any) -> list[str] | None:
    return None if value == ALL_CATALOGS else list(value)


class ClaimMappingViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Which values of the provider's groups claim give which groups and catalogs."""

    serializer_class = ClaimMappingSerializer
    permission_classes = [AdminOnly]
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self) -> QuerySet[ClaimMapping]:
        if getattr(self, "swagger_fake_view", False):  # the schema: no caller
            return ClaimMapping.objects.none()
        return mappings_visible_to(self.request.user).order_by("value")

    @extend_schema(request=MappingInputSerializer, responses=ClaimMappingSerializer)
    def create(self, request: Request) -> Response:
        data = MappingInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        mapping = create_mapping(
            data.validated_data["value"],
            groups=data.validated_data["groups"],
            catalogs=_catalogs(data.validated_data["catalogs"]),
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(ClaimMappingSerializer(mapping).data, status=201)

    @extend_schema(request=MappingChangeSerializer, responses=ClaimMappingSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        mapping = self.get_object()
        data = MappingChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        update_mapping(
            mapping,
            groups=data.validated_data["groups"],
            catalogs=_catalogs(data.validated_data["catalogs"]),
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(ClaimMappingSerializer(mapping).data)

    def perform_destroy(self, instance: ClaimMapping) -> None:
        delete_mapping(
            instance, actor=self.request.user, request_id=request_id(self.request)
        )


class SignInPolicyView(APIView):
    """Password sign-in: the console's switch and whether passwords work now."""

    permission_classes = [AdminOnly]
    throttle_classes = [WriteRateThrottle]

    def _answer(self) -> Response:
        body = {
            "password_login": console_switch(),
            "password_login_effective": password_login_on(),
            "sso": sso_on(),
        }
        return Response(SignInPolicySerializer(body).data)

    @extend_schema(responses=SignInPolicySerializer)
    def get(self, request: Request) -> Response:
        return self._answer()

    @extend_schema(request=SignInPolicySerializer, responses=SignInPolicySerializer)
    def patch(self, request: Request) -> Response:
        data = SignInPolicySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        set_password_login(
            data.validated_data["password_login"],
            actor=request.user,
            request_id=request_id(request),
        )
        return self._answer()
