"""Writing and checking the audit log."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from catalog.access import actor_name, stored_user

GENESIS = "0" * 64
# One lock key for the whole chain: appends are serialised, reads are not.
_CHAIN_LOCK = 7_310_001


def _canonical(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), cls=DjangoJSONEncoder
    )


def event_hash(event: AuditEvent) -> str:
    body = {
        "event_type": event.event_type,
        "actor_name": event.actor_name,
        "request_id": str(event.request_id),
        "catalog_slug": event.catalog_slug,
        "catalog_version": event.catalog_version,
        "summary": event.summary,
        "input": json.loads(_canonical(event.input)),
        "output": json.loads(_canonical(event.output)),
        "created": event.created.isoformat(),
        "prev_hash": event.prev_hash,
    }
    if event.selection_id is not None:
        body["selection_id"] = str(event.selection_id)
    return hashlib.sha256(_canonical(body).encode()).hexdigest()


def record_event(
    event_type: str,
    *,
    actor: Any,
    request_id: uuid.UUID | None,
    catalog_slug: str = "",
    catalog_version: int = 0,
    summary: str,
    input: dict[str, Any],
    output: dict[str, Any],
    selection_id: uuid.UUID | None = None,
) -> AuditEvent:
    """Append one event to the chain, inside the caller's transaction if any."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK])
        last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
        event = AuditEvent(
            event_type=event_type,
            actor=stored_user(actor),
            actor_name=actor_name(actor),
            request_id=request_id or uuid.uuid4(),
            selection_id=selection_id,
            catalog_slug=catalog_slug,
            catalog_version=catalog_version,
            summary=summary[:300],
            input=json.loads(_canonical(input)),
            output=json.loads(_canonical(output)),
            created=timezone.now(),
            prev_hash=last or GENESIS,
        )
        event.hash = event_hash(event)
        event.save()
    return event


@dataclass(frozen=True)
class ChainCheck:
    ok: bool
    checked: int
    first_bad_id: int | None
    problem: str


def verify_chain(batch: int = 2000) -> ChainCheck:
    """Recompute every hash in order; report the first row that does not match."""
    previous = GENESIS
    checked = 0
    for event in AuditEvent.objects.order_by("id").iterator(chunk_size=batch):
        if event.prev_hash != previous:
            return ChainCheck(False, checked, event.pk, "previous hash does not match")
        if event_hash(event) != event.hash:
            return ChainCheck(False, checked, event.pk, "content does not match hash")
        previous = event.hash
        checked += 1
    return ChainCheck(True, checked, None, "")
