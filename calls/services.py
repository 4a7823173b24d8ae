"""Running a tool call through Quiver (issue 22): access -> validation -> approval
-> the upstream call -> one ``tool_call`` audit event -> the answer.

* Access and validation are exactly POST tool-calls/validate's
  (``decide_call``): a tool the caller could never be offered is the same answer
  as a made-up name, and an invalid call never reaches the upstream.
* A tool without a source, or gone from it, is refused: nothing can run it.
* A tool that needs approval runs only with an approval of this exact call
  (``calls.approvals``); without one, a pending approval is made and the answer
  says so. The approval is spent in the transaction that records the call.
* Every attempt is one audit event with its outcome (``ran``, ``refused``,
  ``pending``, ``denied``, ``failed``, ``timed_out``). When that row cannot be
  written after the upstream ran, the answer is ``CallNotRecorded`` (a 503)."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any, NoReturn

from django.conf import settings
from django.db import DatabaseError, transaction
from django.http import Http404

from audit.choices import EventType
from audit.services import record_event
from calls.approvals import ApprovalRefused, request_approval, use_approval
from calls.hashing import arguments_hash, canonical_json
from calls.observe import call_recorded, observed_call
from calls.upstream import Target, UpstreamFailure, call_upstream, fingerprint
from catalog.access import access_for, get_catalog_for_user
from catalog.models import Catalog, Tool
from selection.services.tool_calls import (
    BLOCKING_FLAGS,
    LinkedSelection,
    decide_call,
    get_selection_for_caller,
)
from sources.models import SourceTool
from sources.secrets import decrypt_headers
from telemetry import tracing

log = logging.getLogger(__name__)
NOT_RECORDED = (
    "audit: the call ran upstream but could not be recorded, so its result is "
    "withheld; do not repeat it before checking with an operator"
)


class CallNotRecorded(Exception):
    """The upstream ran but the call's audit row could not be written."""


@dataclass
class CallAnswer:
    """What the caller is told. ``status`` is the REST status of the outcome."""

    outcome: str
    tool: str
    reason: str = ""
    status: int = 200
    refused_field: str = ""
    content: list[dict[str, Any]] | None = None
    structured_content: dict[str, Any] | None = None
    is_error: bool = True
    approval_id: str | None = None
    call_id: str | None = None
    errors: list[dict[str, str]] = field(default_factory=list)
    hint: str = ""
    flags: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        answer = {
            "outcome": self.outcome,
            "tool": self.tool,
            "reason": self.reason,
            "content": self.content or [],
            "structured_content": self.structured_content,
            "is_error": self.is_error,
            "approval_id": self.approval_id,
            "call_id": self.call_id,
        }
        if self.outcome == "pending":
            answer["status"] = "pending_approval"
        if self.errors or self.hint:
            answer.update(errors=self.errors, hint=self.hint)
        return answer


@dataclass
class _Call:
    """One attempt, as the audit row records it."""

    user: Any
    catalog: Catalog
    name: str
    arguments: dict[str, Any]
    selection_id: uuid.UUID | None
    approval_id: str | None
    request_id: uuid.UUID | None
    channel: str
    started: float = field(default_factory=time.perf_counter)
    tool: Tool | None = None
    link: SourceTool | None = None
    upstream_tried: bool = False


@observed_call
def execute_call(
    user: Any,
    *,
    name: str,
    arguments: dict[str, Any],
    catalog: str | None = None,
    selection_id: uuid.UUID | None = None,
    approval_id: str | None = None,
    request_id: uuid.UUID | None = None,
    channel: str = "api",
) -> CallAnswer:
    """Run one call for ``user`` in the order of the module's docstring.

    Raises ``Http404`` for a catalog or selection the caller may not see (no row:
    nothing was attempted) and ``CallNotRecorded`` as described above."""
    with tracing.span("quiver.call.access"):
        access = access_for(user)
        selection = None
        if selection_id is not None:
            selection = get_selection_for_caller(access, selection_id, caller=user)
        found = get_catalog_for_user(user, _catalog_slug(catalog, selection))
    call = _Call(
        user, found, name, arguments, selection_id, approval_id, request_id, channel
    )
    tool, decided = decide_call(
        found, access, selection, name, arguments, ("source_link__source",)
    )
    if tool is None:
        rule = f"name: no tool {name!r} in {found.slug!r}"
        return _refuse(call, rule, status=404, field="name")
    call.tool = tool
    if BLOCKING_FLAGS & set(decided["flags"]) or not decided["valid"]:
        return _refuse_invalid(call, decided)
    # Fetched with the tool; a tool without a source has no ``source_link``.
    call.link = getattr(tool, "source_link", None)
    if call.link is None:
        return _refuse(call, "name: no source to run it", status=409, field="name")
    if call.link.gone:
        return _refuse(call, "name: gone from its source", status=409, field="name")
    if "requires_approval" in decided["flags"]:
        if not approval_id:
            return _pending(call)
        return _run_approved(call, approval_id)
    call.approval_id = None
    return _run(call)


def _catalog_slug(asked: str | None, selection: LinkedSelection | None) -> str:
    if selection is None:
        return asked or "default"
    if asked and asked != selection.catalog_slug:
        # The same rule as tool-calls/validate: a selection answers its own catalog.
        raise Http404(
            f"selection_id: was made in catalog {selection.catalog_slug!r}, "
            f"not {asked!r}"
        )
    return selection.catalog_slug


def _refuse_invalid(call: _Call, decided: dict[str, Any]) -> CallAnswer:
    """Not allowed or not offered (403, the validator's hint), else bad
    arguments (400 naming the first, with every error and the repair hint)."""
    flags = decided["flags"]
    if "not_offered" in flags or "not_allowed" in flags:
        field_name = "selection_id" if "not_offered" in flags else "name"
        rule = f"{field_name}: {decided['hint']}"
        answer = _refuse(call, rule, status=403, field=field_name)
    else:
        first = decided["errors"][0] if decided["errors"] else {}
        where = f"arguments{first.get('pointer', '')}"
        rule = f"{where}: {first.get('message', 'invalid')}"
        answer = _refuse(call, rule, status=400, field="arguments")
    answer.errors = decided["errors"]
    answer.hint = decided["hint"]
    answer.flags = flags
    return answer


def _refuse(call: _Call, reason: str, *, status: int, field: str) -> CallAnswer:
    with transaction.atomic():
        event = _record(call, "refused", reason)
    return CallAnswer(
        "refused",
        call.name,
        reason,
        status=status,
        refused_field=field,
        call_id=str(event.pk),
        approval_id=call.approval_id,
    )


def _pending(call: _Call) -> CallAnswer:
    """A pending approval and the pending call's row, in one transaction."""
    assert call.tool is not None
    with transaction.atomic():
        approval = request_approval(
            tool=call.tool,
            arguments=call.arguments,
            caller=call.user,
            selection_id=call.selection_id,
            request_id=call.request_id,
        )
        call.approval_id = str(approval.id)
        reason = (
            "approval: a person must approve this call; re-send it with approval_id"
        )
        event = _record(call, "pending", reason)
    return CallAnswer(
        "pending",
        call.name,
        reason,
        status=202,
        refused_field="approval_id",
        approval_id=call.approval_id,
        call_id=str(event.pk),
        structured_content={
            "status": "pending_approval",
            "approval_id": call.approval_id,
            "tool": call.name,
            "expires": approval.expires.isoformat(),
        },
        content=[
            {"type": "text", "text": f"pending_approval {call.approval_id}: {reason}"}
        ],
    )


def _run_approved(call: _Call, approval_id: str) -> CallAnswer:
    """Spend the approval, run, record: one transaction, so the approval is used
    only with its record, and a second call with it waits on the row lock."""
    assert call.tool is not None
    refused: ApprovalRefused | None = None
    try:
        with transaction.atomic():
            try:
                with transaction.atomic():
                    use_approval(
                        approval_id,
                        tool=call.tool,
                        arguments=call.arguments,
                        caller=call.user,
                    )
            except ApprovalRefused as exc:
                refused = exc
            if refused is None:
                return _run(call)
    except DatabaseError as exc:
        if not call.upstream_tried:
            raise
        _not_recorded(call, "ran", exc)
    outcome = "denied" if refused.denied else "refused"
    with transaction.atomic():
        event = _record(call, outcome, refused.reason)
    return CallAnswer(
        outcome,
        call.name,
        refused.reason,
        status=403 if refused.denied else 409,
        refused_field="approval_id",
        approval_id=call.approval_id,
        call_id=str(event.pk),
    )


def _run(call: _Call) -> CallAnswer:
    """The upstream call and its row (in the caller's transaction, if any)."""
    assert call.tool is not None and call.link is not None
    source = call.link.source
    target = Target(
        source_id=source.pk,
        source_name=source.name,
        catalog=call.catalog.slug,
        url=source.url,
        headers=decrypt_headers(source),
        headers_fingerprint=fingerprint(source.headers_encrypted),
        timeout=float(source.timeout_seconds or 30.0),
        kind=source.kind,
        stdio_name=source.stdio_name,
    )
    call.upstream_tried = True
    try:
        result = call_upstream(
            target,
            call.link.upstream_name,
            call.arguments,
            idempotent=_idempotent(call.tool, call.link),
        )
    except UpstreamFailure as exc:
        outcome = "timed_out" if exc.timed_out else "failed"
        return _finish(call, outcome, exc.reason, status=200)
    body = {"content": result.content, "structured_content": result.structured_content}
    size = len(canonical_json(body).encode())
    if size > source.max_result_bytes:
        reason = (
            f"result: {size} bytes, over source {source.name!r}'s limit of "
            f"{source.max_result_bytes}"
        )
        return _finish(call, "failed", reason, status=200, size=size)
    outcome = "failed" if result.is_error else "ran"
    reason = _error_text(result.content) if result.is_error else ""
    answer = _finish(call, outcome, reason, status=200, size=size, body=body)
    answer.content = result.content
    answer.structured_content = result.structured_content
    answer.is_error = result.is_error
    return answer


def _finish(
    call: _Call,
    outcome: str,
    reason: str,
    *,
    status: int,
    size: int | None = None,
    body: dict[str, Any] | None = None,
) -> CallAnswer:
    try:
        # One INSERT (autocommit), or a part of the approval's transaction.
        event = _record(call, outcome, reason, size=size, body=body)
    except DatabaseError as exc:
        _not_recorded(call, outcome, exc)
    return CallAnswer(
        outcome,
        call.name,
        reason,
        status=status,
        approval_id=call.approval_id,
        call_id=str(event.pk),
    )


def _not_recorded(call: _Call, outcome: str, exc: Exception) -> NoReturn:
    """The upstream ran and its row is lost: say so in the log (no arguments,
    their hash) and to the caller."""
    log.warning(
        "tool call NOT RECORDED: %s (%s, arguments %s, approval %s): %s",
        call.name,
        outcome,
        arguments_hash(call.arguments),
        call.approval_id,
        exc,
    )
    raise CallNotRecorded(NOT_RECORDED) from exc


def _record(
    call: _Call,
    outcome: str,
    reason: str,
    *,
    size: int | None = None,
    body: dict[str, Any] | None = None,
) -> Any:
    """The one ``tool_call`` event of this attempt (I22.md's shape)."""
    tool, link = call.tool, call.link
    recorded: dict[str, Any] = {
        "tool": tool.name if tool is not None else call.name,
        "tool_version": tool.version if tool is not None else None,
        "source": link.source.name if link is not None else None,
        "upstream_name": link.upstream_name if link is not None else None,
    }
    if not getattr(settings, "QUIVER_CALL_ARGUMENTS_HASH_ONLY", False):
        recorded["arguments"] = call.arguments
    recorded.update(
        arguments_hash=arguments_hash(call.arguments),
        selection_id=str(call.selection_id) if call.selection_id else None,
        approval_id=call.approval_id,
        channel=call.channel,
    )
    result_hash = None
    if body is not None:
        result_hash = sha256(canonical_json(body).encode()).hexdigest()
    event = record_event(
        EventType.TOOL_CALL,
        actor=call.user,
        request_id=call.request_id,
        catalog_slug=call.catalog.slug,
        catalog_version=call.catalog.version,
        summary=f"{recorded['tool']} {outcome}",
        input=recorded,
        output={
            "outcome": outcome,
            "reason": reason[:1000],
            "duration_ms": round((time.perf_counter() - call.started) * 1000, 3),
            "result_hash": result_hash,
            "result_bytes": size,
            "is_error": outcome != "ran",
        },
    )
    call_recorded(call.catalog.slug, recorded["source"], outcome)
    return event


def _idempotent(tool: Tool, link: SourceTool) -> bool:
    """The tool's own ``idempotentHint``, else the upstream's as last synced."""
    hints = tool.annotations if isinstance(tool.annotations, dict) else {}
    if "idempotentHint" in hints:
        return hints["idempotentHint"] is True
    upstream = (
        link.upstream.get("annotations") if isinstance(link.upstream, dict) else None
    )
    return isinstance(upstream, dict) and upstream.get("idempotentHint") is True


def _error_text(content: list[dict[str, Any]]) -> str:
    texts = [
        str(block.get("text", "")) for block in content if block.get("type") == "text"
    ]
    return ("upstream: " + " ".join(texts))[:300] if texts else "upstream: is_error"
