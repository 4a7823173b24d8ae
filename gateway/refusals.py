"""Every refusal on /mcp is an audit row (issue 30), written before it is answered.

A refused tool call (``call_tool``, or a tool called by its own name) is a
``tool_call`` row with outcome ``refused``, as the call path records its own
refusals; any other refusal (``search_tools``, ``get_tool_details``, a JSON-RPC
request the gateway or the SDK refuses, a method or body /mcp does not take) is
an ``mcp_refused`` row. Both keep the field and rule answered, the MCP tool or
method, and the arguments' sha256, never the arguments themselves (they were
refused: they may be too large, or not storable at all); every text is stored
with NUL and lone surrogates written as ``\\uXXXX``.

A refusal costs 1 of the key's rate budget, as every audited request does; past
the budget the refusal is still answered, and the first one of the minute is
recorded saying that the rest of that minute's are not, so a key cannot write
audit rows faster than its budget. Refusals before the key is known (Host,
Origin, a missing or unknown key) have no actor and are not recorded; the
unknown-key delay and per-address limit bound them instead.

When the row cannot be written the refusal is not answered: ``NotRecorded``."""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, transaction
from rest_framework.exceptions import Throttled

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

    user: Any
    request_id: uuid.UUID
    method: str = ""
    tool: str = ""  # the MCP tool called, or the catalog tool a call names
    arguments: Any = None
    call: bool = False  # a tool call: refused as a ``tool_call`` row
    charged: bool = False  # already cost 1 of the key's budget
    over_budget: bool = False  # refused by the key's budget
    started: float = field(default_factory=time.perf_counter)

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
    common: dict[str, Any] = {
        "actor": attempt.user,
        "request_id": attempt.request_id,
        "catalog_slug": attempt.catalog(),
        "summary": f"{name} refused: {output['refused']}",
    }
    if attempt.call:
        record_event(
            EventType.TOOL_CALL,
            input=_call_input(attempt),
            output=_call_output(attempt, output),
            **common,
        )
        return
    recorded = {
        "channel": CHANNEL,
        "method": attempt.method,
        "tool": attempt.tool,
        "arguments_hash": _hash(attempt.arguments),
    }
    record_event(EventType.MCP_REFUSED, input=recorded, output=output, **common)


def _call_input(attempt: Attempt) -> dict[str, Any]:
    """A ``tool_call`` row's input, as the call path writes it (calls.services),
    with the arguments' hash only."""
    given = attempt.arguments if isinstance(attempt.arguments, dict) else {}
    return {
        "tool": attempt.tool,
        "tool_version": None,
        "source": None,
        "upstream_name": None,
        "arguments_hash": _hash(given.get("arguments", given)),
        "selection_id": _text(given.get("selection_id")),
        "approval_id": _text(given.get("approval_id")),
        "channel": CHANNEL,
    }


def _call_output(attempt: Attempt, refused: dict[str, Any]) -> dict[str, Any]:
    elapsed = (time.perf_counter() - attempt.started) * 1000
    return {
        "outcome": "refused",
        "reason": refused["refused"],
        "duration_ms": round(elapsed, 3),
        "result_hash": None,
        "result_bytes": None,
        "is_error": True,
        **{k: v for k, v in refused.items() if k in ("field", "code", "note")},
    }


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


def _text(value: Any) -> str | None:
    return printable(value)[:100] if isinstance(value, str) and value else None
