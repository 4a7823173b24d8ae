"""Refusals of OAuth requests and tokens, each an audit row (``oauth_refused``).

A refusal is recorded when it is known whom it concerns: the person at the
consent page, or the connection whose code, refresh token or access token
(signed by a key this server trusts) was refused. A secret nobody was issued (an
unknown code or token, a signature that does not verify) concerns nobody: it is
not recorded, and costs its address as an unknown API key does
(``config.ratelimit.penalize_unknown_key``). As at /mcp, a refusal costs 1 of the
caller's rate budget; past it the first refusal of the minute is recorded saying
that the rest of that minute's are not, so no one writes rows faster than their
budget."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import DatabaseError, transaction
from rest_framework.exceptions import Throttled

from audit.actors import Caller
from audit.choices import EventType
from audit.services import record_event
from config.jsonparse import printable
from config.logfilters import safe_error_text
from config.ratelimit import charge_caller, first_this_minute

log = logging.getLogger(__name__)
OVER_BUDGET = (
    "over the caller's rate budget: its further refusals this minute are not recorded"
)
DETAIL_CHARS = 500
NOT_RECORDED = "audit: the refusal could not be recorded; try again shortly"


class NotRecorded(Exception):
    """A refusal whose audit row could not be written."""


def record_refusal(
    error: str,
    detail: str,
    *,
    actor: Caller,
    where: str,
    request_id: uuid.UUID | None = None,
    client: dict[str, Any] | None = None,
) -> bool:
    """Record a refusal (``error``: the OAuth error code, ``detail``: why,
    ``where``: the endpoint); False when over budget and not recorded. Raises
    ``NotRecorded`` when its row cannot be written: the refusal is then not
    answered either (a 503 that may be sent again), as at /mcp."""
    over = False
    try:
        charge_caller(actor, 1)
    except Throttled:
        over = True
        if not first_this_minute(actor, "oauth-refusal"):
            return False
    output: dict[str, Any] = {
        "error": error,
        "detail": printable(detail)[:DETAIL_CHARS],
    }
    if over:
        output["note"] = OVER_BUDGET
    try:
        with transaction.atomic():
            record_event(
                EventType.OAUTH_REFUSED,
                actor=actor,
                request_id=request_id,
                summary=f"{where} refused: {output['detail']}"[:300],
                input={"where": where, "client": client},
                output=output,
            )
    except DatabaseError as exc:
        log.warning("OAuth refusal not recorded: %s", safe_error_text(exc))
        raise NotRecorded(NOT_RECORDED) from exc
    return True
