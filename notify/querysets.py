"""Reading webhooks within access: the lookup every API view and console page
uses (admins of the catalog only; a catalog the caller cannot see is a 404)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from audit.actors import Caller
from catalog.lookups import get_catalog_for_user
from catalog.models import Catalog
from config.params import MAX_ID, whole_number
from identity.access import access_for
from notify.models import Delivery, Webhook
from notify.services import PERMISSION_RULE


def _row_id(value: int | str) -> int | None:
    """A row id from a URL, or None for anything that cannot be one."""
    return whole_number(str(value), MAX_ID)


def webhooks_of(user: Caller, slug: str) -> tuple[Catalog, QuerySet[Webhook]]:
    """The catalog's webhooks: 404 for a catalog the caller cannot see, 403 for
    one who sees it but is not an admin."""
    catalog = get_catalog_for_user(user, slug)
    if not access_for(user).manages_webhooks:
        raise PermissionDenied(PERMISSION_RULE)
    return catalog, Webhook.objects.filter(catalog=catalog).select_related("catalog")


def get_webhook_for_user(user: Caller, webhook_id: int | str) -> Webhook:
    """One webhook, by the same rule as ``webhooks_of``."""
    access = access_for(user)
    visible = Catalog.objects.visible_to(access)
    pk = _row_id(webhook_id)
    webhook = (
        Webhook.objects.filter(pk=pk, catalog__in=visible)
        .select_related("catalog")
        .first()
        if pk is not None
        else None
    )
    if webhook is None:
        raise Http404("webhook: no such webhook")
    if not access.manages_webhooks:
        raise PermissionDenied(PERMISSION_RULE)
    return webhook


def deliveries_of(webhook: Webhook, status: str = "") -> QuerySet[Delivery]:
    """The webhook's delivery log, newest first (without the bodies)."""
    rows = Delivery.objects.filter(webhook=webhook).defer("payload")
    return rows.filter(status=status) if status else rows


def get_delivery(webhook: Webhook, delivery_id: int | str) -> Delivery:
    pk = _row_id(delivery_id)
    delivery = (
        Delivery.objects.filter(pk=pk, webhook=webhook)
        .select_related("webhook__catalog")
        .first()
        if pk is not None
        else None
    )
    if delivery is None:
        raise Http404("delivery: no such delivery of this webhook")
    return delivery
