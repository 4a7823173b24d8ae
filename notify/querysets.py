"""Reading webhooks within access: the lookup the console pages use beside
catalog.owned's (admins of the catalog only; a catalog the caller cannot see is
a 404), and their delivery log."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from audit.actors import Caller
from catalog.owned import by_id, get_owned_for_user
from notify.models import Delivery, Webhook


def get_webhook_for_user(user: Caller, webhook_id: int | str) -> Webhook:
    """One webhook: 404 unless its catalog is visible, 403 for a caller who sees
    it but is not an admin."""
    return get_owned_for_user(Webhook, user, webhook_id)


def deliveries_of(webhook: Webhook, status: str = "") -> QuerySet[Delivery]:
    """The webhook's delivery log, newest first (without the bodies)."""
    rows = Delivery.objects.filter(webhook=webhook).defer("payload")
    return rows.filter(status=status) if status else rows


def get_delivery(webhook: Webhook, delivery_id: int | str) -> Delivery:
    rows = Delivery.objects.filter(webhook=webhook)
    delivery = by_id(rows.select_related("webhook__catalog"), delivery_id)
    if delivery is None:
        raise Http404("delivery: no such delivery of this webhook")
    return delivery
