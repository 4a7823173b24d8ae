"""The fixed vocabularies of notifications."""

from django.db import models


class WebhookEvent(models.TextChoices):
    REQUESTED = "approval.requested", "An approval is requested"
    DECIDED = "approval.decided", "An approval is approved, denied or expires"
    USED = "approval.used", "An approved call is run"


class WebhookFormat(models.TextChoices):
    QUIVER = "quiver", "Quiver JSON (signed)"
    SLACK = "slack", "Slack-compatible (text and blocks)"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Waiting to be sent"
    SENDING = "sending", "Being sent"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class DeliveryOutcome(models.TextChoices):
    """One attempt's outcome, as ``quiver_webhook_deliveries_total`` counts it."""

    DELIVERED = "delivered", "2xx from the receiver"
    RETRYING = "retrying", "Failed; another attempt is due"
    FAILED = "failed", "Failed; no attempt left"
    REFUSED = "refused", "Not sent: the destination is a denied address"


class EmailStatus(models.TextChoices):
    PENDING = "pending", "Waiting to be sent"
    SENDING = "sending", "Being sent"
    SENT = "sent", "Sent"
    NOBODY = "nobody", "No approver to tell"
    FAILED = "failed", "Failed"
