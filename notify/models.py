"""Webhooks of a catalog, their deliveries, and the approval emails sent.

A webhook belongs to one catalog and hears only that catalog's approvals. Its
signing secret is stored encrypted (``notify.signing``); after a rotation the
previous secret keeps signing beside the new one until ``previous_secret_until``.
Each event sent to a webhook is one ``Delivery`` row: the durable queue of its
attempts (the broker only carries the news) and the log an admin reads.
"""

from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from catalog.owned import CatalogOwned, owning_catalog
from identity.access import Access
from notify.choices import DeliveryStatus, EmailStatus, WebhookEvent, WebhookFormat


def all_events() -> list[str]:
    return list(WebhookEvent.values)


class Webhook(CatalogOwned):
    """Where a catalog's approvals are announced (admins only)."""

    catalog = owning_catalog("webhooks")
    events = models.JSONField(default=all_events)
    format = models.CharField(
        max_length=10, choices=WebhookFormat.choices, default=WebhookFormat.QUIVER
    )
    active = models.BooleanField(default=True)
    # Secrets: encrypted (Fernet, a key of their own), never shown after creation
    # or rotation.
    secret_encrypted = models.TextField()
    previous_secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    secret_rotated = models.DateTimeField(null=True, blank=True)
    secret_fields = ("secret_encrypted", "previous_secret_encrypted")

    @staticmethod
    def managed_by(access: Access) -> bool:
        return access.manages_webhooks


class Delivery(models.Model):
    """One event for one webhook: what is sent (``payload``, the same on every
    attempt and replay) and how its attempts went (no secret, no signature)."""

    webhook = models.ForeignKey(
        Webhook, on_delete=models.CASCADE, related_name="deliveries"
    )
    # The event's id: the same for every webhook told of it and for a replay, so
    # a receiver can drop a repeat.
    event_id = models.UUIDField()
    event = models.CharField(max_length=30, choices=WebhookEvent.choices)
    approval_id = models.UUIDField(db_index=True)
    payload = models.JSONField(encoder=DjangoJSONEncoder)
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt = models.DateTimeField()
    lease_until = models.DateTimeField(null=True, blank=True)
    last_attempt = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    delivered = models.DateTimeField(null=True, blank=True)
    replay_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [
            models.Index(fields=["webhook", "-created"], name="delivery_log"),
            # The sweep's read: only what still waits is indexed.
            models.Index(
                fields=["next_attempt"],
                name="delivery_waiting",
                condition=models.Q(status__in=["pending", "sending"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.approval_id} ({self.status})"


class ApprovalEmail(models.Model):
    """The one email of an approval to its approvers: claimed before it is sent,
    so a task run twice (a retry, a redelivery) never sends a second one."""

    approval_id = models.UUIDField(primary_key=True)
    status = models.CharField(
        max_length=10, choices=EmailStatus.choices, default=EmailStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    recipients = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    sent = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"approval email {self.approval_id} ({self.status})"
