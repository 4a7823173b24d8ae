"""A call that reaches for its upstream, in committed steps (HOUSE_STYLE §11):

1. ``claim``: one transaction, committed before the upstream is contacted: the
   approval (when the tool needs one) locked, checked and marked ``used`` with
   its ``approval`` event, the attempt's ``started`` event (its id is the call's
   ``call_id``) and a ``CallInFlight`` row with the call's deadline.
2. the upstream call, with no transaction open.
3. ``finish``: the outcome's event (naming ``call_id``) and the row's deletion,
   one transaction.

Whatever stops a process between 1 and 3 (a kill, a crash, the database lost),
the start is on record and the approval spent, so a re-sent call is refused as
already used: never two executions for one approval, never an execution without
a row. ``sweep_interrupted`` (every worker, every ``QUIVER_SWEEP_S``) gives each
row left past its deadline + ``QUIVER_CALL_SWEEP_MARGIN_S`` its outcome:
``interrupted``, saying the upstream may have run."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from calls.approvals import record_use, use_approval
from calls.models import CallInFlight
from calls.records import CallRecord, record_call, record_start

SWEEP_BATCH = 200
# Beyond the call's own timeout: the pool's answer margin (calls.upstream).
DEADLINE_MARGIN_S = 5.0
INTERRUPTED = (
    "interrupted: no outcome was recorded by {deadline}: the process running the "
    "call stopped (or lost the database) mid-call; the upstream may have run it"
)


def claim(call: CallRecord, timeout: float) -> None:
    """Commit the call's start (and its approval's use); raises
    ``ApprovalRefused`` with nothing written when the approval does not cover
    it. Sets ``call.call_id``."""
    assert call.tool is not None
    with transaction.atomic():
        approval = None
        if call.approval_id:
            approval = use_approval(
                call.approval_id,
                tool=call.tool,
                arguments=call.arguments,
                caller=call.user,
            )
        started = record_start(call, timeout)
        call.call_id = started.pk
        if approval is not None:
            record_use(
                approval,
                caller=call.user,
                request_id=call.request_id,
                call_id=started.pk,
            )
        deadline = timezone.now() + timedelta(seconds=timeout + DEADLINE_MARGIN_S)
        CallInFlight.objects.create(call_id=started.pk, deadline=deadline)


def finish(
    call: CallRecord,
    outcome: str,
    reason: str,
    *,
    size: int | None = None,
    body: dict[str, Any] | None = None,
) -> AuditEvent:
    """The claimed call's outcome event; its ``CallInFlight`` row goes with it.
    (A row the sweep already took: the late outcome is recorded all the same,
    after the sweep's ``interrupted``.)"""
    assert call.call_id is not None  # claimed
    with transaction.atomic():
        event = record_call(call, outcome, reason, size=size, body=body)
        CallInFlight.objects.filter(pk=call.call_id).delete()
    return event


def sweep_interrupted(now: datetime | None = None) -> int:
    """Record ``interrupted`` for every call in flight past its deadline plus
    the margin; returns how many. Safe to run anywhere at once: each batch skips
    rows another run (or a late ``finish``) holds."""
    now = now or timezone.now()
    due = now - timedelta(seconds=settings.QUIVER_CALL_SWEEP_MARGIN_S)
    total = 0
    while True:
        with transaction.atomic():
            rows = list(
                CallInFlight.objects.select_for_update(skip_locked=True)
                .filter(deadline__lt=due)
                .order_by("deadline")[:SWEEP_BATCH]
            )
            ids = [row.call_id for row in rows]
            started = AuditEvent.objects.select_related("actor").in_bulk(ids)
            for row in rows:
                event = started.get(row.call_id)
                if event is not None:
                    _record_interrupted(event, row.deadline)
            CallInFlight.objects.filter(pk__in=ids).delete()
        total += len(rows)
        if len(rows) < SWEEP_BATCH:
            return total


def _record_interrupted(started: AuditEvent, deadline: datetime) -> None:
    """The outcome of a call whose process stopped: the start's own actor,
    request and input, naming its ``call_id``."""
    given = started.input if isinstance(started.input, dict) else {}
    tool = given.get("tool") or "?"
    when = deadline.isoformat(timespec="seconds")
    record_event(
        EventType.TOOL_CALL,
        actor=started.actor,
        request_id=started.request_id,
        catalog_slug=started.catalog_slug,
        catalog_version=started.catalog_version,
        summary=f"{tool} interrupted",
        input={**given, "call_id": started.pk},
        output={
            "outcome": "interrupted",
            "reason": INTERRUPTED.format(deadline=when),
            "duration_ms": None,
            "result_hash": None,
            "result_bytes": None,
            "is_error": True,
        },
    )
