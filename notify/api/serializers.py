"""Webhooks in the API: the input checked by type (the rules are the services'),
the output without any secret (a new one is added once, as ``secret``)."""

from __future__ import annotations

from rest_framework import serializers

from config.strict import StrictFieldsMixin
from notify.choices import DeliveryStatus, WebhookEvent, WebhookFormat
from notify.models import Delivery, Webhook
from notify.services import MAX_GRACE_HOURS


class WebhookInputSerializer(StrictFieldsMixin, serializers.Serializer):
    """What a caller may send to add a webhook (PATCH: any subset of it)."""

    name = serializers.CharField(max_length=64)
    url = serializers.CharField(max_length=2000, trim_whitespace=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WebhookEvent.choices),
        required=False,
        max_length=len(WebhookEvent.values),
        help_text="the events to send (default: all three)",
    )
    format = serializers.ChoiceField(choices=WebhookFormat.choices, required=False)
    active = serializers.BooleanField(required=False)


class RotateSerializer(StrictFieldsMixin, serializers.Serializer):
    grace_hours = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_GRACE_HOURS,
        help_text="hours the old secret keeps signing beside the new one "
        "(default QUIVER_WEBHOOK_ROTATION_GRACE_HOURS; 0: stop now)",
    )


class WebhookSerializer(serializers.ModelSerializer):
    """A webhook as its catalog's admins see it: never a secret."""

    catalog: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )

    class Meta:
        model = Webhook
        fields = [
            "id",
            "catalog",
            "name",
            "url",
            "events",
            "format",
            "active",
            "secret_rotated",
            "previous_secret_until",
            "created",
            "updated",
        ]
        read_only_fields = fields


class NewSecretWebhookSerializer(WebhookSerializer):
    """The answer of create and rotate: the webhook and its secret, this once."""

    secret = serializers.CharField(read_only=True)

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer):
    """One line of the delivery log: never the body's signature or a secret."""

    status = serializers.ChoiceField(choices=DeliveryStatus.choices, read_only=True)

    class Meta:
        model = Delivery
        fields = [
            "id",
            "event_id",
            "event",
            "approval_id",
            "status",
            "attempts",
            "last_attempt",
            "next_attempt",
            "last_status_code",
            "last_error",
            "delivered",
            "replay_of",
            "created",
        ]
        read_only_fields = fields
