"""Running a tool call through Quiver: decide -> limits -> claim -> the upstream call ->
the outcome -> the answer.

One path for every way a call arrives (REST execute, its approved run, ``/mcp``), so
access and validation are exactly ``tool-calls/validate``'s, a call needing approval
runs only with an approval of this exact call, a per-person source gets only its
person's token, and every refusal, start and outcome is an audit event, the claim
committed before the upstream is contacted.
The rules: docs/explanation/security.md, Calls and Approvals.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import Any, NoReturn

from django.conf import settings
from django.db import DatabaseError, transaction
from django.http import Http404

from audit.actors import Caller
from calls.answers import (
    NEEDS_AUTHORIZATION,
    PENDING_REASON,
    CallAnswer,
    pending_answer,
)
from calls.approvals import ApprovalRefused, request_approval
from calls.attempts import claim, finish
from calls.hashing import arguments_hash, canonical_json
from calls.limits import LimitReached, hold
from calls.observe import observed_call
from calls.reads import read_call
from calls.records import CallRecord, Ended, record_call
from calls.upstream import (
    Target,
    UpstreamFailure,
    UpstreamResult,
    call_upstream,
    fingerprint,
)
from catalog.models import Tool
from catalog.names import Ambiguous
from identity.access import access_for
from screening.policy import ScreeningPolicy
from screening.results import screen_result, without_notice
from selection.services.tool_calls import (
    BLOCKING_FLAGS,
    LinkedSelection,
    decide_call,
    get_selection_for_caller,
)
from sources.secrets import HeadersUnreadable, decrypt_headers
from telemetry import tracing
from vault.acting import person_for
from vault.links import connect_url
from vault.services.tokens import (
    AuthorizationServerDown,
    NeedsAuthorization,
    after_refusal,
    credential_for,
    give_up,
)

log = logging.getLogger(__name__)
NOT_RECORDED = (
    "audit: the call ran upstream but its outcome could not be recorded, so its "
    "result is withheld; its start is on record (call_id {call_id}); do not "
    "repeat it before checking with an operator"
)


FAULT = (
    "quiver: an unexpected error after the call was started; the upstream may "
    "have run it (the server's log has the error)"
)


class CallNotRecorded(Exception):
    """The upstream ran but the call's outcome could not be written."""


@observed_call
def execute_call(
    user: Caller,
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
        rows = read_call(access, _catalog_slug(catalog, selection), name)
    found = rows.catalog
    call = CallRecord(
        user, found, name, arguments, selection_id, approval_id, request_id, channel
    )
    person = person_for(user)
    call.person = person.get_username() if person is not None else None
    if rows.ambiguous:
        return _refuse(call, str(Ambiguous(name, found.slug)), status=409, field="name")
    tool, decided = decide_call(
        found, access, selection, name, arguments, rows.tools, rows.settings
    )
    if tool is None:
        rule = f"name: no tool {name!r} in {found.slug!r}"
        return _refuse(call, rule, status=404, field="name")
    call.tool = tool
    tracing.annotate(**{"gen_ai.tool.name": tool.name})  # the span of quiver.call
    if BLOCKING_FLAGS & set(decided["flags"]) or not decided["valid"]:
        return _refuse_invalid(call, decided)
    # Read with the tool (calls.reads); a tool without a source has none.
    call.link = getattr(tool, "source_link", None)
    if call.link is None:
        return _refuse(call, "name: no source to run it", status=409, field="name")
    if call.link.gone:
        return _refuse(call, "name: gone from its source", status=409, field="name")
    if "requires_approval" not in decided["flags"]:
        call.approval_id = None
    elif not approval_id:
        return _pending(call)
    return _attempt(call, rows.settings.screening())


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


def _refuse_invalid(call: CallRecord, decided: dict[str, Any]) -> CallAnswer:
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


def _refuse(
    call: CallRecord,
    reason: str,
    *,
    status: int,
    field: str = "",
    outcome: str = "refused",
    limit: str = "",
) -> CallAnswer:
    """A call that will not run, as its one event (its id is the ``call_id``)."""
    with transaction.atomic():
        event = record_call(call, Ended(outcome, reason))
    return CallAnswer(
        outcome,
        call.name,
        reason,
        status=status,
        refused_field=field,
        call_id=str(event.pk),
        approval_id=call.approval_id,
        limit=limit,
    )


def _pending(call: CallRecord) -> CallAnswer:
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
        event = record_call(call, Ended("pending", PENDING_REASON))
    return pending_answer(call.name, approval, call_id=str(event.pk))


def _attempt(call: CallRecord, policy: ScreeningPolicy) -> CallAnswer:
    """Slots, the claim, the upstream and the outcome (see calls.attempts);
    the result screened under the catalog's ``policy``."""
    assert call.tool is not None and call.link is not None
    source = call.link.source
    try:
        target = _target(call)
    except HeadersUnreadable as exc:
        reason = f"source {source.name!r}: {exc}"
        return _refuse(call, reason, status=503, limit="source_headers")
    except NeedsAuthorization as exc:
        answer = _refuse(call, exc.reason, status=403, outcome=NEEDS_AUTHORIZATION)
        return _linked(answer, call, exc)
    except AuthorizationServerDown as exc:
        return _refuse(call, str(exc), status=503, limit="authorization_server")
    try:
        slots = hold(call.user, source.pk, target.timeout)
    except LimitReached as exc:
        return _refuse(call, exc.reason, status=exc.status, limit=exc.limit)
    with slots:
        try:
            claim(call, target.timeout)
        except ApprovalRefused as refused:
            outcome = "denied" if refused.denied else "refused"
            status = 403 if refused.denied else 409
            return _refuse(
                call,
                refused.reason,
                status=status,
                field="approval_id",
                outcome=outcome,
            )
        try:
            return _run(call, target, policy)
        except CallNotRecorded:
            raise
        except Exception:  # a fault of Quiver's own: on record, then a 500
            _record_fault(call)
            raise


def _record_fault(call: CallRecord) -> None:
    """The outcome of a claimed call that broke inside Quiver (best effort: if
    even this cannot be written, the sweep says ``interrupted``)."""
    try:
        finish(call, Ended("failed", FAULT))
    except DatabaseError:
        log.warning("tool call %s: its fault could not be recorded", call.call_id)


def _target(call: CallRecord) -> Target:
    """Where the call goes, with whose credential (the person's token for a
    source that runs as each person, else the source's headers); its timeout
    is the source's, never more than ``QUIVER_CALL_TIMEOUT_MAX_SECONDS`` (rows
    saved before that rule included)."""
    assert call.link is not None
    source = call.link.source
    timeout = min(
        float(source.timeout_seconds or 30.0),
        float(settings.QUIVER_CALL_TIMEOUT_MAX_SECONDS),
    )
    credential = credential_for(call.user, source) if source.kind == "mcp" else None
    call.credential = credential
    if credential is not None:
        headers, secret_text = credential.headers, ""
        call.upstream_account = credential.account
    else:
        headers, secret_text = decrypt_headers(source), source.headers_encrypted
        call.upstream_account = {"kind": "shared"}
    return Target(
        source_id=source.pk,
        source_name=source.name,
        catalog=call.catalog.slug,
        url=source.url,
        headers=headers,
        account=credential.connection_id if credential is not None else 0,
        headers_fingerprint=(
            credential.fingerprint
            if credential is not None
            else fingerprint(secret_text)
        ),
        timeout=timeout,
        kind=source.kind,
        stdio_name=source.stdio_name,
        max_result_bytes=source.max_result_bytes,
    )


def _run(call: CallRecord, target: Target, policy: ScreeningPolicy) -> CallAnswer:
    """The upstream call (claimed, no transaction open) and its outcome; the
    result the caller gets is the screened one (screening.results), and the
    outcome's row names the rules that hit, never what they matched."""
    assert call.tool is not None and call.link is not None
    try:
        result = _upstream(call, target)
    except NeedsAuthorization as exc:
        answer = _finish(call, Ended(NEEDS_AUTHORIZATION, exc.reason))
        answer.status = 403
        return _linked(answer, call, exc)
    except UpstreamFailure as exc:
        outcome = "timed_out" if exc.timed_out else "failed"
        return _finish(call, Ended(outcome, exc.reason))
    body = {"content": result.content, "structured_content": result.structured_content}
    size = len(canonical_json(body).encode())
    if size > target.max_result_bytes:
        reason = (
            f"result: {size} bytes, over source {target.source_name!r}'s limit of "
            f"{target.max_result_bytes} (max_result_bytes)"
        )
        return _finish(call, Ended("failed", reason, size=size))
    with tracing.span("quiver.call.screen"):
        screened = screen_result(
            result.content, result.structured_content, policy, masked=result.masked
        )
    outcome = "failed" if result.is_error else "ran"
    reason = _error_text(without_notice(screened.content)) if result.is_error else ""
    if screened.action == "block":
        reason = (
            "result: withheld by screening ("
            + ", ".join(sorted({f.rule for f in screened.findings}))
            + ")"
        )
    summary = screened.summary()
    ended = Ended(outcome, reason, size=size, body=body, screening=summary)
    answer = _finish(call, ended)
    answer.content = screened.content
    answer.structured_content = screened.structured
    answer.is_error = result.is_error or screened.action == "block"
    answer.screening = summary
    return answer


def _upstream(call: CallRecord, target: Target) -> UpstreamResult:
    """The upstream's result; a person's token it refuses (401: nothing ran)
    is refreshed and the call sent once more, a second refusal removes the
    connection (``NeedsAuthorization`` either way when there is no token)."""
    assert call.tool is not None and call.link is not None
    name, idempotent = call.link.upstream_name, _idempotent(call.tool)
    try:
        return call_upstream(target, name, call.arguments, idempotent=idempotent)
    except UpstreamFailure as exc:
        if not exc.unauthorized or call.credential is None:
            raise
    source = call.link.source
    call.credential = after_refusal(call.credential, source)
    target = dataclasses.replace(
        target,
        headers=call.credential.headers,
        headers_fingerprint=call.credential.fingerprint,
    )
    try:
        return call_upstream(target, name, call.arguments, idempotent=idempotent)
    except UpstreamFailure as exc:
        if exc.unauthorized:
            raise give_up(call.credential, source) from exc
        raise


def _linked(
    answer: CallAnswer, call: CallRecord, exc: NeedsAuthorization
) -> CallAnswer:
    """A call that needs the person's authorization names where to give it."""
    assert call.link is not None
    answer.status = 403
    if exc.connectable:
        answer.authorization_url = connect_url(call.link.source)
    return answer


def _finish(call: CallRecord, ended: Ended) -> CallAnswer:
    try:
        finish(call, ended)
    except DatabaseError as exc:
        _not_recorded(call, ended.outcome, exc)
    return CallAnswer(
        ended.outcome,
        call.name,
        ended.reason,
        approval_id=call.approval_id,
        call_id=str(call.call_id),
    )


def _not_recorded(call: CallRecord, outcome: str, exc: Exception) -> NoReturn:
    """The upstream ran and its outcome is lost (its start is on record, and the
    sweep will call it interrupted): say so in the log (no arguments, their
    hash) and to the caller."""
    log.warning(
        "tool call NOT RECORDED: %s (%s, call %s, arguments %s, approval %s): %s",
        call.name,
        outcome,
        call.call_id,
        arguments_hash(call.arguments),
        call.approval_id,
        exc,
    )
    raise CallNotRecorded(NOT_RECORDED.format(call_id=call.call_id)) from exc


def _idempotent(tool: Tool) -> bool:
    """The tool's own ``idempotentHint``: a sync writes the upstream's, held by the
    never-loosen rule, and a curator's edit is final. The upstream's last word
    (``SourceTool.upstream``) is a claim, never a reason to retry."""
    hints = tool.annotations if isinstance(tool.annotations, dict) else {}
    return hints.get("idempotentHint") is True


def _error_text(content: list[dict[str, Any]]) -> str:
    texts = [
        str(block.get("text", "")) for block in content if block.get("type") == "text"
    ]
    return ("upstream: " + " ".join(texts))[:300] if texts else "upstream: is_error"
