"""Webhooks API: parse, check access (notify.querysets), call one service, render.

Admins only: a caller who cannot see the catalog gets 404, any other non-admin
403. The secret is in the answer of create and rotate only.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from config.http import request_id
from config.ratelimit import WriteRateThrottle
from notify import services
from notify.api.serializers import (
    DeliverySerializer,
    NewSecretWebhookSerializer,
    RotateSerializer,
    WebhookInputSerializer,
    WebhookSerializer,
)
from notify.choices import DeliveryStatus
from notify.models import Webhook
from notify.querysets import (
    deliveries_of,
    get_delivery,
    get_webhook_for_user,
    webhooks_of,
)

STATUS_PARAMETER = OpenApiParameter(
    "status", str, enum=list(DeliveryStatus.values), description="only this status"
)
KNOWN_PARAMETERS = frozenset({"status", "page"})


def _with_secret(webhook: Webhook, secret: str) -> dict[str, Any]:
    webhook.secret = secret  # type: ignore[attr-defined]
    return dict(NewSecretWebhookSerializer(webhook).data)


class CatalogWebhookList(generics.ListCreateAPIView):
    """A catalog's webhooks; POST adds one (201 with its secret, shown once)."""

    serializer_class = WebhookSerializer
    permission_classes = [IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self) -> QuerySet[Webhook]:
        if getattr(self, "swagger_fake_view", False):
            return Webhook.objects.none()
        return webhooks_of(self.request.user, self.kwargs["slug"])[1]

    @extend_schema(
        request=WebhookInputSerializer, responses={201: NewSecretWebhookSerializer}
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        catalog, _hooks = webhooks_of(request.user, kwargs["slug"])
        given = WebhookInputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        webhook, secret = services.create_webhook(
            catalog,
            **given.validated_data,
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(_with_secret(webhook, secret), status=status.HTTP_201_CREATED)


class DeliveryFilter(forms.Form):
    status = forms.ChoiceField(required=False, choices=DeliveryStatus.choices)


class WebhookViewSet(viewsets.GenericViewSet):
    """One webhook: read, edit, delete, rotate its secret, its delivery log and
    the replay of a failed delivery."""

    serializer_class = WebhookSerializer
    permission_classes = [IsAuthenticated]
    throttle_classes = [WriteRateThrottle]
    queryset = Webhook.objects.none()

    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(WebhookSerializer(get_webhook_for_user(request.user, pk)).data)

    @extend_schema(request=WebhookInputSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        webhook = get_webhook_for_user(request.user, pk)
        given = WebhookInputSerializer(data=request.data, partial=True)
        given.is_valid(raise_exception=True)
        updated = services.update_webhook(
            webhook,
            dict(given.validated_data),
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(WebhookSerializer(updated).data)

    def destroy(self, request: Request, pk: str) -> Response:
        services.delete_webhook(
            get_webhook_for_user(request.user, pk),
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=RotateSerializer, responses=NewSecretWebhookSerializer)
    @action(detail=True, methods=["post"])
    def rotate(self, request: Request, pk: str) -> Response:
        """A new secret (in this answer only); the old one keeps signing beside
        it for ``grace_hours``."""
        webhook = get_webhook_for_user(request.user, pk)
        given = RotateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        webhook, secret = services.rotate_secret(
            webhook,
            grace_hours=given.validated_data.get("grace_hours"),
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(_with_secret(webhook, secret))

    @extend_schema(
        parameters=[STATUS_PARAMETER], responses=DeliverySerializer(many=True)
    )
    @action(detail=True, methods=["get"])
    def deliveries(self, request: Request, pk: str) -> Response:
        """The delivery log, newest first, paged."""
        webhook = get_webhook_for_user(request.user, pk)
        params = request.query_params
        unknown = sorted(set(params) - KNOWN_PARAMETERS)
        if unknown:
            raise ValidationError(
                {name: ["not a filter of deliveries"] for name in unknown}
            )
        form = DeliveryFilter(params)
        if not form.is_valid():
            rule = f"must be one of {', '.join(DeliveryStatus.values)}"
            raise ValidationError({"status": [rule]})
        rows = deliveries_of(webhook, form.cleaned_data["status"])
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)

    @extend_schema(request=None, responses={202: DeliverySerializer})
    @action(
        detail=True,
        methods=["post"],
        url_path=r"deliveries/(?P<delivery_id>[0-9]{1,19})/replay",
    )
    def replay(self, request: Request, pk: str, delivery_id: str) -> Response:
        """Send a failed delivery again, as a new delivery of the same event."""
        webhook = get_webhook_for_user(request.user, pk)
        replay = services.replay_delivery(
            get_delivery(webhook, delivery_id),
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(
            DeliverySerializer(replay).data, status=status.HTTP_202_ACCEPTED
        )
