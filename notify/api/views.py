"""Webhooks API: catalog.api.owned's list, read, edit and delete (access, rate
limit) with the webhooks' serializers and services, and a webhook's rotation,
delivery log and replay.

Admins only: a caller who cannot see the catalog gets 404, any other non-admin
403. The secret is in the answer of create and rotate only.
"""

from __future__ import annotations

from typing import Any

from django import forms
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.api.owned import OwnedList, OwnedViewSet
from catalog.models import Catalog
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
from notify.querysets import deliveries_of, get_delivery

STATUS_PARAMETER = OpenApiParameter(
    "status", str, enum=list(DeliveryStatus.values), description="only this status"
)
KNOWN_PARAMETERS = frozenset({"status", "page"})


def _with_secret(webhook: Webhook, secret: str) -> dict[str, Any]:
    webhook.secret = secret  # type: ignore[attr-defined]
    return dict(NewSecretWebhookSerializer(webhook).data)


@extend_schema_view(
    post=extend_schema(
        request=WebhookInputSerializer, responses={201: NewSecretWebhookSerializer}
    )
)
class CatalogWebhookList(OwnedList):
    """A catalog's webhooks; POST adds one (201 with its secret, shown once)."""

    model = Webhook
    serializer_class = WebhookSerializer
    input_serializer = WebhookInputSerializer

    def add(self, catalog: Catalog, data: dict[str, Any]) -> Response:
        webhook, secret = services.create_webhook(
            catalog, **data, actor=self.request.user, request_id=self.request_id()
        )
        return Response(_with_secret(webhook, secret), status=status.HTTP_201_CREATED)


class DeliveryFilter(forms.Form):
    status = forms.ChoiceField(required=False, choices=DeliveryStatus.choices)


@extend_schema_view(partial_update=extend_schema(request=WebhookInputSerializer))
class WebhookViewSet(OwnedViewSet):
    """One webhook: read, edit, delete, rotate its secret, its delivery log and
    the replay of a failed delivery."""

    model = Webhook
    serializer_class = WebhookSerializer
    input_serializer = WebhookInputSerializer
    delete_service = services.delete_webhook

    def edit(self, found: Webhook, changes: dict[str, Any]) -> Response:
        updated = services.update_webhook(
            found, changes, actor=self.request.user, request_id=self.request_id()
        )
        return Response(WebhookSerializer(updated).data)

    @extend_schema(request=RotateSerializer, responses=NewSecretWebhookSerializer)
    @action(detail=True, methods=["post"])
    def rotate(self, request: Request, pk: str) -> Response:
        """A new secret (in this answer only); the old one keeps signing beside
        it for ``grace_hours``."""
        webhook = self.get_object()
        given = RotateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        webhook, secret = services.rotate_secret(
            webhook,
            grace_hours=given.validated_data.get("grace_hours"),
            actor=request.user,
            request_id=self.request_id(),
        )
        return Response(_with_secret(webhook, secret))

    @extend_schema(
        parameters=[STATUS_PARAMETER], responses=DeliverySerializer(many=True)
    )
    @action(detail=True, methods=["get"])
    def deliveries(self, request: Request, pk: str) -> Response:
        """The delivery log, newest first, paged."""
        webhook = self.get_object()
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
        webhook = self.get_object()
        replay = services.replay_delivery(
            get_delivery(webhook, delivery_id),
            actor=request.user,
            request_id=self.request_id(),
        )
        return Response(
            DeliverySerializer(replay).data, status=status.HTTP_202_ACCEPTED
        )
