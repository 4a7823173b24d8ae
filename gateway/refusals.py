"""Every refusal on /mcp is an audit row, written before it is answered.

A refusal of the gateway's own is an ``mcp_refused`` row; a call the call path
judged is its ``tool_call`` rows, written there, so REST and /mcp leave the same rows
for the same call. A row keeps the field and rule, never the refused arguments
(their sha256 only); refusals are charged to the key's rate budget, and when the row
cannot be written the refusal is not answered (``NotRecorded``).
The rules: docs/explanation/security.md, MCP endpoint.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction
from rest_framework.exceptions import Throttled

from audit.actors import Caller
from audit.choices import EventType
from audit.services import record_event
from calls.hashing import canonical_json
from config.jsonparse import printable
from config.logfilters import safe_error_text
from config.ratelimit import charge_caller, first_this_minute
from identity.access import access_for

log = logging.getLogger(__name__)
CHANNEL = "mcp"
OVER_BUDGET = (
    "over the key's rate budget: its further refusals this minute are answered "
    "but not recorded"
)
NOT_RECORDED = "audit: the refusal could not be recorded; try again shortly"
REASON_CHARS = 1000


class NotRecorded(Exception):
    """A refusal whose audit row could not be written (the database is down)."""


@dataclass
class Attempt:
    """One /mcp request, as its refusal would be recorded."""

    user: Caller
    request_id: uuid.UUID
    method: str = ""
    tool: str = ""  # the MCP tool called, or the catalog tool a call names
    arguments: Any = None
    charged: bool = False  # already cost 1 of the key's budget
    over_budget: bool = False  # refused by the key's budget

    def catalog(self) -> str:
        """The catalog the request names, when the caller may see it (else the
        row has none, and only readers of every catalog see it)."""
        slug = self.arguments.get("catalog") if isinstance(self.arguments, dict) else ""
        if not isinstance(slug, str) or not slug:
            return ""
        return slug if access_for(self.user).may_see_catalog(slug) else ""


def record(
    attempt: Attempt,
    reason: str,
    *,
    field: str,
    code: int | None = None,
    status: int | None = None,
) -> None:
    """The row of ``attempt``'s refusal (``reason``, naming ``field``), charged to
    the key's budget; raises ``NotRecorded`` when it cannot be written."""
    if not attempt.charged and not attempt.over_budget:
        try:
            charge_caller(attempt.user, 1)
            attempt.charged = True
        except Throttled:
            attempt.over_budget = True
    if attempt.over_budget and not first_this_minute(attempt.user, "mcp-refusal"):
        return
    output: dict[str, Any] = {"refused": printable(reason)[:REASON_CHARS]}
    output.update(field=printable(field)[:200], code=code, http_status=status)
    if attempt.over_budget:
        output["note"] = OVER_BUDGET
    try:
        with transaction.atomic():
            _write(attempt, output)
    except DatabaseError as exc:
        log.warning("MCP refusal not recorded: %s", safe_error_text(exc))
        raise NotRecorded(NOT_RECORDED) from exc


def _write(attempt: Attempt, output: dict[str, Any]) -> None:
    name = attempt.tool or attempt.method or "request"
    recorded = {
        "channel": CHANNEL,
        "method": attempt.method,
        "tool": attempt.tool,
        "arguments_hash": _hash(attempt.arguments),
    }
    record_event(
        EventType.MCP_REFUSED,
        actor=attempt.user,
        request_id=attempt.request_id,
        catalog_slug=attempt.catalog(),
        summary=f"{name} refused: {output['refused']}",
        input=recorded,
        output=output,
    )


def _hash(arguments: Any) -> str | None:
    """sha256 of the arguments' canonical JSON, as ``calls.hashing`` makes it (a
    lone surrogate is hashed as its UTF-16 code unit: it has no UTF-8)."""
    if arguments is None:
        return None
    try:
        text = canonical_json(arguments)
    except (TypeError, ValueError):
        text = repr(arguments)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
