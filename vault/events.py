"""The ``upstream_auth`` audit events: a source's authorization discovered, a
person's account connected, a connection refused, disconnected or removed.

What a row names: the source, the person, the connection's public id, the
authorization server's issuer and the action's reason. Never a code, a state,
a verifier or a token."""

from __future__ import annotations

import uuid
from typing import Any

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
from sources.models import Source

DISCOVERED = "discovered"
REGISTERED = "registered"
CONNECTED = "connected"
REFUSED = "refused"
DISCONNECTED = "disconnected"
REMOVED = "removed"


def record(
    action: str,
    source: Source,
    *,
    actor: Actor,
    person: Any = None,
    connection: Any = None,
    issuer: str = "",
    reason: str = "",
    request_id: uuid.UUID | None = None,
    **facts: Any,
) -> None:
    """One event, in the caller's transaction."""
    who = person.get_username() if person is not None else None
    summary = f"source {source.name!r}: {action}" + (f" ({who})" if who else "")
    record_event(
        EventType.UPSTREAM_AUTH,
        actor=actor,
        request_id=request_id,
        catalog_slug=source.catalog.slug,
        catalog_version=source.catalog.version,
        summary=summary,
        input={
            "action": action,
            "source": source.name,
            "source_id": source.pk,
            "person": who,
            "issuer": issuer,
            **facts,
        },
        output={
            "connection": str(connection.public_id) if connection else None,
            "reason": reason[:1000],
        },
    )
