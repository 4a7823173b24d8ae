"""What a webhook is sent: the event's JSON body, or its Slack-compatible form.

The body is made once per event (``event_body``), kept on each delivery and sent
as it is on every attempt and replay. The arguments are in it unless
``QUIVER_CALL_ARGUMENTS_HASH_ONLY`` is on or they are over ``MAX_ARGUMENT_BYTES``
(then ``arguments`` is null and ``arguments_omitted`` says why); their hash is
always there. Only the approval's own catalog is named.
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.urls import reverse

from calls.lifecycle import DECIDED, REQUESTED, USED, ApprovalEvent

MAX_ARGUMENT_BYTES = 64 * 1024
SLACK_ARGUMENT_CHARS = 2500
SLACK_HEADLINES = {
    (REQUESTED, "pending"): ":hourglass_flowing_sand: Approval needed",
    (DECIDED, "approved"): ":white_check_mark: Approved",
    (DECIDED, "denied"): ":no_entry: Denied",
    (DECIDED, "expired"): ":alarm_clock: Expired undecided",
    (USED, "used"): ":arrow_forward: Approved call run",
}


def approval_link(approval_id: uuid.UUID | str) -> str | None:
    """The approval's row on the Approvals page, from ``QUIVER_PUBLIC_URL``
    (None when it is not set: a worker knows no host of its own)."""
    base = str(settings.QUIVER_PUBLIC_URL).rstrip("/")
    if not base:
        return None
    return f"{base}{reverse('calls:approval-list')}#approval-{approval_id}"


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _arguments(event: ApprovalEvent) -> dict[str, Any]:
    shown: dict[str, Any] = {"arguments": None, "arguments_omitted": None}
    if settings.QUIVER_CALL_ARGUMENTS_HASH_ONLY:
        shown["arguments_omitted"] = "hash_only"
    elif len(json.dumps(event.arguments, cls=DjangoJSONEncoder)) > MAX_ARGUMENT_BYTES:
        shown["arguments_omitted"] = "size"
    else:
        shown["arguments"] = event.arguments
    return {**shown, "arguments_hash": event.arguments_hash}


def event_body(event: ApprovalEvent, event_id: uuid.UUID) -> dict[str, Any]:
    """The documented JSON body of one event (docs/how-to/operating.md)."""
    approval = {
        "id": str(event.approval_id),
        "status": event.status,
        "tool": event.tool,
        "tool_version": event.tool_version,
        **_arguments(event),
        "agent": event.requester,
        "selection_id": str(event.selection_id) if event.selection_id else None,
        "requested": _when(event.requested),
        "expires": _when(event.expires),
        "decided": _when(event.decided),
        "decider": event.decider or None,
        "reason": event.reason,
        "used": _when(event.used),
        "url": approval_link(event.approval_id),
    }
    return {
        "id": str(event_id),
        "type": event.type,
        "created": _when(event.at),
        "catalog": event.catalog,
        "approval": approval,
    }


def slack_escape(text: Any) -> str:
    """Slack's three control characters escaped, so a value can neither mention
    ``<!channel>`` nor make a ``<url|text>`` link."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Characters a reader is shown as their JSON escape: controls (a line break in a
# one-line value), format marks (bidi overrides, zero-width joiners), line and
# paragraph separators, private and lone surrogate code points.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})


def literal(text: Any, *, newlines: bool = False) -> str:
    """``text`` with every character that could end a code span or block (the
    backtick, as ``\\u0060``), start a line (unless ``newlines``) or reorder
    what follows written as its JSON escape: shown, never obeyed."""
    shown = []
    for char in str(text):
        if char == "`":
            shown.append("\\u0060")
        elif char == "\n" and newlines:
            shown.append(char)
        elif unicodedata.category(char) in _ESCAPED_CATEGORIES:
            shown.append(json.dumps(char)[1:-1])
        else:
            shown.append(char)
    return "".join(shown)


def slack_code(value: Any) -> str:
    """A caller's or a tool's value as an inline code span: inert in Slack's
    mrkdwn and in Markdown alike (no bold, italics, link, mention or emoji, and
    nothing in it can end the span)."""
    text = slack_escape(literal(value))
    return f"`{text}`" if text else "(empty)"


def _mrkdwn(text: str) -> dict[str, Any]:
    # verbatim: Slack links no bare URL or channel name in our own words either.
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def slack_body(body: dict[str, Any]) -> dict[str, Any]:
    """An incoming-webhook message (``text`` and ``blocks``) of the same event.
    Quiver's own words are mrkdwn; every value a caller, a person or a tool
    gave (tool, catalog, agent, decider, reason, arguments) is code."""
    approval = body["approval"]
    headline = SLACK_HEADLINES.get(
        (body["type"], approval["status"]), slack_code(body["type"])
    )
    line = (
        f"{headline}: {slack_code(approval['tool'])} "
        f"(version {int(approval['tool_version'])}) in catalog "
        f"{slack_code(body['catalog'])}, asked by {slack_code(approval['agent'])}"
    )
    if approval["decider"]:
        line += f"; by {slack_code(approval['decider'])}"
    if approval["reason"]:
        line += f": {slack_code(str(approval['reason'])[:500])}"
    if approval["status"] == "pending":
        line += f". Expires {slack_code(approval['expires'])}"
    if approval["url"]:
        line += f". <{approval['url']}|Open in Quiver>"
    blocks: list[dict[str, Any]] = [{"type": "section", "text": _mrkdwn(line)}]
    if body["type"] == REQUESTED:
        blocks.append(_arguments_block(approval))
    ids = f"approval {slack_code(approval['id'])} · {slack_code(body['id'])}"
    blocks.append({"type": "context", "elements": [_mrkdwn(ids)]})
    return {"text": line, "blocks": blocks}


def _arguments_block(approval: dict[str, Any]) -> dict[str, Any]:
    """The arguments as JSON in a code block: a backtick in them is its JSON
    escape, so nothing in them can close the block."""
    if approval["arguments"] is None:
        shown = f"arguments sha256 {slack_code(approval['arguments_hash'])}"
    else:
        text = json.dumps(approval["arguments"], indent=1, ensure_ascii=False)
        if len(text) > SLACK_ARGUMENT_CHARS:
            text = text[:SLACK_ARGUMENT_CHARS] + "\n…"
        shown = f"```{slack_escape(literal(text, newlines=True))}```"
    return {"type": "section", "text": _mrkdwn(shown)}


def render(webhook_format: str, body: dict[str, Any]) -> bytes:
    """The bytes sent (and signed): compact JSON, UTF-8."""
    document = slack_body(body) if webhook_format == "slack" else body
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return text.encode()
