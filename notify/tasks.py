"""Celery tasks of notifications: thin, take ids, idempotent, call a service.

A delivery's row is its durable queue: the task makes one attempt (claimed, so a
repeat does nothing), sends itself again for a short backoff, and leaves a long
one to the sweep, which every worker runs every ``QUIVER_WEBHOOK_SWEEP_S`` (a
countdown longer than the broker's visibility timeout would be handed out twice).
"""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from config.celery import app
from jobs import services as jobs
from jobs.periodic import PeriodicSend
from notify import delivery, mail
from notify.choices import EmailStatus
from notify.models import ApprovalEmail

SWEEP = "notify.tasks.sweep_notifications"
EMAIL = "notify.tasks.email_approvers"
# Backoffs up to this long ride on the task's countdown; longer ones on the sweep.
COUNTDOWN_MAX_S = 60.0


@shared_task
def deliver_webhook(delivery_id: int) -> None:
    """One attempt of a delivery (nothing if it is not due or is held)."""
    wait = delivery.attempt(delivery_id)
    if wait is not None and wait <= COUNTDOWN_MAX_S:
        deliver_webhook.apply_async((delivery_id,), countdown=wait)


@shared_task
def email_approvers(approval_id: str) -> str:
    """The approval's one email to its approvers (nothing if already sent)."""
    return mail.email_approvers(approval_id)


@shared_task
def sweep_notifications() -> dict[str, int]:
    """Deliveries and emails that wait past their time are sent again."""
    counts = delivery.sweep()
    late = timezone.now() - timedelta(seconds=settings.QUIVER_WEBHOOK_SWEEP_S)
    emails = list(
        ApprovalEmail.objects.filter(status=EmailStatus.PENDING, created__lte=late)
        .order_by("created")
        .values_list("approval_id", flat=True)[: delivery.SWEEP_BATCH]
    )
    for approval_id in emails:
        jobs.send(EMAIL, str(approval_id))
    return {**counts, "emails": len(emails)}


class NotificationSweepTimer(PeriodicSend):
    """Every worker asks for the sweep on a short interval."""

    task = SWEEP

    def every(self) -> float:
        return float(settings.QUIVER_WEBHOOK_SWEEP_S)


app.steps["worker"].add(NotificationSweepTimer)
