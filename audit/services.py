"""Writing and checking the audit log.

``record_event`` is the one way a row enters the log. It appends a row in the
caller's transaction and nothing more: no lock, no read of the chain's head, so
concurrent selections never wait on each other. The row commits or rolls back with
the change it records. ``soon=True`` lets its COMMIT run beside the caller
(audit.writer; the caller waits on the handle before sending what it records), and
``many`` appends a bulk import's rows in one ``COPY``. The sealer (audit.sealing)
gives each row its place in the chain and its keyed hash within a bounded delay,
and every read of the chain's integrity (verify, archive) seals first.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any, Literal, Required, TypedDict, Unpack, overload

from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from audit.acting import with_acting_for
from audit.actors import Actor, actor_name, stored_user
from audit.models import AuditEvent
from audit.sealing import seal_and_checkpoint, seal_pending
from audit.verify import ChainCheck, Damage, parse_since, verify_chain
from audit.writer import PendingEvent, insert, send_soon
from config.fast.copy_rows import copy_insert

__all__ = [
    "ChainCheck",
    "Damage",
    "EventFields",
    "EventRow",
    "PendingEvent",
    "parse_since",
    "record_event",
    "seal_and_checkpoint",
    "seal_pending",
    "verify_chain",
]


def _plain(value: dict[str, Any]) -> Any:
    """The value as JSON will store it (dates, UUIDs, decimals made text)."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


class EventFields(TypedDict, total=False):
    """What an audit event records besides its type: ``record_event``'s keywords."""

    actor: Required[Actor]
    request_id: Required[uuid.UUID | None]
    catalog_slug: str
    catalog_version: int
    summary: Required[str]
    input: Required[dict[str, Any]]
    output: Required[dict[str, Any]]
    selection_id: uuid.UUID | None


class EventRow(TypedDict):
    """One row of ``record_event(..., many=...)``: what differs between a bulk
    import's rows."""

    summary: str
    input: dict[str, Any]
    output: dict[str, Any]


@overload
def record_event(
    event_type: str, *, soon: Literal[False] = False, **fields: Unpack[EventFields]
) -> AuditEvent: ...


@overload
def record_event(
    event_type: str, *, soon: Literal[True], **fields: Unpack[EventFields]
) -> PendingEvent: ...


@overload
def record_event(
    event_type: str,
    *,
    actor: Actor,
    request_id: uuid.UUID | None,
    catalog_slug: str,
    catalog_version: int,
    many: Sequence[EventRow],
) -> int: ...


def record_event(
    event_type: str,
    *,
    soon: bool = False,
    many: Sequence[EventRow] | None = None,
    **fields: Any,
) -> AuditEvent | PendingEvent | int:
    """Append one unsealed event, inside the caller's transaction if any (a single
    INSERT, made once per process: it needs no savepoint of its own).

    ``soon``: its COMMIT may run beside the caller (audit.writer); the caller must
    ``wait()`` on the handle before it sends anything the row records. In a
    transaction the row is written in it at once. Its JSON is encoded once, into
    the INSERT (the same text ``_plain`` would give).

    ``many``: one row per item, the other keywords shared, all in one ``COPY``
    (a bulk import's changes); gives back how many.
    """
    if many is not None:
        return _record_many(event_type, many, **fields)
    if soon:
        return send_soon(_event(event_type, fields, plain=False))
    return insert(_event(event_type, fields, plain=True))


def _event(event_type: str, fields: dict[str, Any], *, plain: bool) -> AuditEvent:
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


def _record_many(
    event_type: str,
    rows: Sequence[EventRow],
    *,
    actor: Actor,
    request_id: uuid.UUID | None,
    catalog_slug: str,
    catalog_version: int,
) -> int:
    """``rows`` appended in one statement, in the caller's transaction."""
    now = timezone.now()
    events = [
        AuditEvent(
            event_type=event_type,
            actor=stored_user(actor),
            actor_name=actor_name(actor),
            request_id=request_id or uuid.uuid4(),
            catalog_slug=catalog_slug,
            catalog_version=catalog_version,
            summary=str(row["summary"])[:300],
            input=with_acting_for(actor, row["input"]),
            output=row["output"],
            created=now,
        )
        for row in rows
    ]
    # One COPY; the JSON is written as the field's encoder makes it, as _plain.
    copy_insert(events)
    return len(events)
