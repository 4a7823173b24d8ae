"""Writing and checking the audit log.

``record_event`` appends a row in the caller's transaction and nothing more: no lock,
no read of the chain's head, so concurrent selections never wait on each other. The
row commits or rolls back with the change it records. The sealer (audit.sealing)
gives it its place in the chain and its keyed hash within a bounded delay, and every
read of the chain's integrity (verify, archive) seals first.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Required, TypedDict, Unpack

from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from audit.acting import with_acting_for
from audit.actors import Actor, actor_name, stored_user
from audit.models import AuditEvent
from audit.sealing import seal_and_checkpoint, seal_pending
from audit.verify import ChainCheck, Damage, parse_since, verify_chain
from audit.writer import PendingEvent, insert, send_soon
from config.copy_rows import copy_insert

__all__ = [
    "ChainCheck",
    "Damage",
    "EventFields",
    "parse_since",
    "record_event",
    "record_event_soon",
    "record_events",
    "seal_and_checkpoint",
    "seal_pending",
    "verify_chain",
]


def _plain(value: dict[str, Any]) -> Any:
    """The value as JSON will store it (dates, UUIDs, decimals made text)."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


class EventFields(TypedDict, total=False):
    """What an audit event records besides its type: the keywords of
    ``record_event`` and ``record_event_soon``."""

    actor: Required[Actor]
    request_id: Required[uuid.UUID | None]
    catalog_slug: str
    catalog_version: int
    summary: Required[str]
    input: Required[dict[str, Any]]
    output: Required[dict[str, Any]]
    selection_id: uuid.UUID | None


def record_event(event_type: str, **fields: Unpack[EventFields]) -> AuditEvent:
    """Append one unsealed event, inside the caller's transaction if any (a single
    INSERT, made once per process: it needs no savepoint of its own)."""
    return insert(_event(event_type, fields, plain=True))


def record_event_soon(event_type: str, **fields: Unpack[EventFields]) -> PendingEvent:
    """``record_event`` whose COMMIT may run beside the caller (audit.writer): the
    caller must ``wait()`` on the handle before it sends anything the row records.
    In a transaction the row is written in it at once. Its JSON is encoded once,
    into the INSERT (the same text ``_plain`` would give)."""
    return send_soon(_event(event_type, fields, plain=False))


def _event(event_type: str, fields: EventFields, *, plain: bool) -> AuditEvent:
    """The row; ``plain``: its JSON values as they will read back (dates and UUIDs
    made text), for callers that keep using the returned object."""
    actor = fields["actor"]
    given = with_acting_for(actor, fields["input"])
    return AuditEvent(
        event_type=event_type,
        actor=stored_user(actor),
        actor_name=actor_name(actor),
        request_id=fields["request_id"] or uuid.uuid4(),
        selection_id=fields.get("selection_id"),
        catalog_slug=fields.get("catalog_slug", ""),
        catalog_version=fields.get("catalog_version", 0),
        summary=fields["summary"][:300],
        input=_plain(given) if plain else given,
        output=_plain(fields["output"]) if plain else fields["output"],
        created=timezone.now(),
    )


def record_events(
    events: list[dict[str, Any]], *, actor: Actor, request_id: uuid.UUID | None = None
) -> int:
    """Append many unsealed events in one statement (a bulk import's changes), in
    the caller's transaction; each dict holds ``event_type``, ``catalog_slug``,
    ``catalog_version``, ``summary``, ``input`` and ``output``."""
    now = timezone.now()
    rows = [
        AuditEvent(
            event_type=event["event_type"],
            actor=stored_user(actor),
            actor_name=actor_name(actor),
            request_id=request_id or uuid.uuid4(),
            catalog_slug=event.get("catalog_slug", ""),
            catalog_version=event.get("catalog_version", 0),
            summary=str(event.get("summary", ""))[:300],
            input=with_acting_for(actor, event["input"]),
            output=event["output"],
            created=now,
        )
        for event in events
    ]
    # One COPY; the JSON is written as the field's encoder makes it, as _plain.
    copy_insert(rows)
    return len(rows)
