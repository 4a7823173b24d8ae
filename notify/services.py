"""Writes of notifications: webhooks (add, edit, rotate, delete, replay), and
the one hook of an approval's lifecycle (``approval_event``).

Webhooks are admins' (``catalog.owned``'s rule: ``manages_webhooks`` within
the catalog). Each change is one ``webhook_changed`` audit event in its
transaction, naming the URL's origin and a hash of the whole URL (a Slack URL's
path is a secret) and never the signing secret, which is returned once, to the
caller that made or rotated it.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.actors import Actor, stored_user
from audit.choices import EventType
from calls.lifecycle import REQUESTED, ApprovalEvent
from catalog.models import Catalog
from catalog.owned import record_change, require_manager, save_named
from config.exceptions import Conflict
from jobs import services as jobs
from notify.choices import DeliveryStatus, WebhookEvent, WebhookFormat
from notify.models import ApprovalEmail, Delivery, Webhook
from notify.payloads import event_body
from notify.signing import encrypt_secret, new_secret
from sources.netguard import url_problem
from sources.secrets import origin

DELIVER = "notify.tasks.deliver_webhook"
EMAIL = "notify.tasks.email_approvers"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")
NAME_RULE = (
    "name: 1 to 64 letters, digits, spaces, '_', '.' and '-', starting with a "
    "letter or digit"
)
MAX_GRACE_HOURS = 720
EDITABLE = ("name", "url", "events", "format", "active")


def _check(webhook: Webhook) -> None:
    errors: dict[str, list[str]] = {}
    if not NAME_RE.fullmatch(webhook.name or ""):
        errors["name"] = [NAME_RULE]
    problem = url_problem(webhook.url or "")
    if problem:
        errors["url"] = [problem]
    events = webhook.events
    if (
        not isinstance(events, list)
        or not events
        or any(e not in WebhookEvent.values for e in events)
    ):
        errors["events"] = [
            "events: a non-empty list of " + ", ".join(WebhookEvent.values)
        ]
    else:
        webhook.events = [e for e in WebhookEvent.values if e in events]
    if webhook.format not in WebhookFormat.values:
        errors["format"] = ["format: one of " + ", ".join(WebhookFormat.values)]
    if errors:
        raise ValidationError(errors)


def _event(
    webhook: Webhook,
    action: str,
    actor: Actor,
    request_id: uuid.UUID | None,
    **details: Any,
) -> None:
    shown = {
        "url_origin": origin(webhook.url),
        "url_sha256": hashlib.sha256(webhook.url.encode()).hexdigest(),
        "events": webhook.events,
        "format": webhook.format,
        "active": webhook.active,
        **details,
    }
    record_change(
        webhook,
        EventType.WEBHOOK_CHANGED,
        action,
        actor=actor,
        request_id=request_id,
        details=shown,
    )


def create_webhook(
    catalog: Catalog,
    *,
    name: str,
    url: str,
    events: list[str] | None = None,
    format: str = WebhookFormat.QUIVER,
    active: bool = True,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> tuple[Webhook, str]:
    """A new webhook of ``catalog`` and its secret, shown this once."""
    require_manager(Webhook, actor, catalog)
    secret = new_secret()
    webhook = Webhook(
        catalog=catalog,
        name=name,
        url=url,
        events=list(WebhookEvent.values) if events is None else events,
        format=format,
        active=active,
        secret_encrypted=encrypt_secret(secret),
        created_by=stored_user(actor),
    )
    _check(webhook)
    with transaction.atomic():
        count = Webhook.objects.select_for_update().filter(catalog=catalog).count()
        if count >= settings.QUIVER_WEBHOOKS_PER_CATALOG:
            limit = settings.QUIVER_WEBHOOKS_PER_CATALOG
            raise ValidationError(
                {"catalog": [f"catalog: at most {limit} webhooks per catalog"]}
            )
        save_named(webhook)
        _event(webhook, "create", actor, request_id)
    return webhook, secret


def update_webhook(
    webhook: Webhook,
    changes: dict[str, Any],
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> Webhook:
    """Change a webhook's name, URL, events, format or whether it is active."""
    require_manager(Webhook, actor, webhook.catalog)
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise ValidationError({unknown[0]: [f"{unknown[0]}: not a webhook field"]})
    with transaction.atomic():
        webhook = _locked(webhook)
        changed = [
            f for f in EDITABLE if f in changes and changes[f] != getattr(webhook, f)
        ]
        if not changed:
            return webhook
        for field in changed:
            setattr(webhook, field, changes[field])
        _check(webhook)
        save_named(webhook, [*changed, "updated"])
        _event(webhook, "update", actor, request_id, changed=changed)
    return webhook


def _locked(webhook: Webhook) -> Webhook:
    return (
        Webhook.objects.select_for_update(of=("self",))
        .select_related("catalog")
        .get(pk=webhook.pk)
    )


def rotate_secret(
    webhook: Webhook,
    *,
    grace_hours: int | None = None,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> tuple[Webhook, str]:
    """A new secret, shown this once. The old one keeps signing beside it for
    ``grace_hours`` (``QUIVER_WEBHOOK_ROTATION_GRACE_HOURS`` by default; 0 ends
    it now), so receivers can move to the new one without a gap."""
    require_manager(Webhook, actor, webhook.catalog)
    hours = settings.QUIVER_WEBHOOK_ROTATION_GRACE_HOURS
    hours = hours if grace_hours is None else grace_hours
    if not isinstance(hours, int) or not 0 <= hours <= MAX_GRACE_HOURS:
        raise ValidationError(
            {"grace_hours": [f"grace_hours: from 0 to {MAX_GRACE_HOURS}"]}
        )
    secret = new_secret()
    now = timezone.now()
    with transaction.atomic():
        webhook = _locked(webhook)
        webhook.previous_secret_encrypted = webhook.secret_encrypted if hours else ""
        webhook.previous_secret_until = now + timedelta(hours=hours) if hours else None
        webhook.secret_encrypted = encrypt_secret(secret)
        webhook.secret_rotated = now
        webhook.save(
            update_fields=[
                "previous_secret_encrypted",
                "previous_secret_until",
                "secret_encrypted",
                "secret_rotated",
                "updated",
            ]
        )
        until = webhook.previous_secret_until
        _event(
            webhook,
            "rotate",
            actor,
            request_id,
            previous_secret_until=until.isoformat() if until else None,
        )
    return webhook, secret


def delete_webhook(
    webhook: Webhook, *, actor: Actor, request_id: uuid.UUID | None = None
) -> None:
    """Delete a webhook and its delivery log (the audit log keeps its history)."""
    require_manager(Webhook, actor, webhook.catalog)
    with transaction.atomic():
        webhook = _locked(webhook)
        _event(webhook, "delete", actor, request_id)
        webhook.delete()


def replay_delivery(
    delivery: Delivery, *, actor: Actor, request_id: uuid.UUID | None = None
) -> Delivery:
    """Send a failed delivery again: a new delivery of the same event (the same
    ``id`` and body, so a receiver that got it after all can drop it), with its
    own attempts; the failed one stays in the log."""
    webhook = delivery.webhook
    require_manager(Webhook, actor, webhook.catalog)
    if delivery.status != DeliveryStatus.FAILED:
        raise Conflict(
            "status",
            f"status: only a failed delivery is replayed, not {delivery.status}",
        )
    with transaction.atomic():
        webhook = _locked(webhook)
        replay = Delivery.objects.create(
            webhook=webhook,
            event_id=delivery.event_id,
            event=delivery.event,
            approval_id=delivery.approval_id,
            payload=delivery.payload,
            next_attempt=timezone.now(),
            replay_of=delivery,
        )
        _event(
            webhook,
            "replay",
            actor,
            request_id,
            delivery_id=delivery.pk,
            event_id=str(delivery.event_id),
            event=delivery.event,
        )
        jobs.enqueue(DELIVER, replay.pk)
    return replay


@dataclass(frozen=True)
class Fanout:
    """What one approval event queued: its deliveries, and whether an email."""

    deliveries: list[int]
    email: bool


def approval_event(event: ApprovalEvent) -> Fanout:
    """The hook of every committed approval step (``calls.lifecycle``): one
    delivery per active webhook of the approval's own catalog that takes this
    event, and, when an approval is requested, its one email to the approvers.
    Rows first, then the tasks (a broker that is down leaves them for the
    sweep)."""
    hooks = list(
        Webhook.objects.filter(
            catalog_id=event.catalog_id, active=True, events__contains=[event.type]
        ).only("pk")
    )
    email = event.type == REQUESTED and bool(settings.QUIVER_APPROVAL_EMAILS)
    now = timezone.now()
    with transaction.atomic():
        body = event_body(event, uuid.uuid4()) if hooks else {}
        rows = Delivery.objects.bulk_create(
            Delivery(
                webhook=hook,
                event_id=uuid.UUID(body["id"]),
                event=event.type,
                approval_id=event.approval_id,
                payload=body,
                next_attempt=now,
            )
            for hook in hooks
        )
        for row in rows:
            jobs.enqueue(DELIVER, row.pk)
        if email:
            _, made = ApprovalEmail.objects.get_or_create(approval_id=event.approval_id)
            email = made
            if made:
                jobs.enqueue(EMAIL, str(event.approval_id))
    return Fanout([row.pk for row in rows], email)
