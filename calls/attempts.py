"""A call that reaches for its upstream, in committed steps (HOUSE_STYLE §11):
``claim`` (the ``started`` event and, for a call needing approval, the approval
marked ``used``, committed before the upstream is contacted), the upstream call
with no transaction open, then ``finish`` (the outcome's event, naming ``call_id``).

Whatever stops a process in between, the start is on record and the approval spent:
never two executions for one approval, never an execution without a row.
``sweep_interrupted`` gives each ``started`` event no outcome names, once its call
cannot be running any more, the outcome ``interrupted``.
The rules: docs/explanation/security.md, Calls.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from calls.approvals import record_use, use_approval
from calls.models import CallSweep
from calls.records import CallRecord, Ended, record_call, record_start

SWEEP_CHUNK = 500
# Beyond the call's own timeout: the pool's answer margin (calls.upstream).
DEADLINE_MARGIN_S = 5.0
# How far back a sweep with no place yet (a new database) looks.
FIRST_SWEEP = timedelta(days=1)
INTERRUPTED = (
    "interrupted: no outcome was recorded by {deadline}: the process running the "
    "call stopped (or lost the database) mid-call; the upstream may have run it"
)


def claim(call: CallRecord, timeout: float) -> None:
    """Commit the call's start (and its approval's use); raises
    ``ApprovalRefused`` with nothing written when the approval does not cover
    it. Sets ``call.call_id``."""
    assert call.tool is not None
    if not call.approval_id:
        call.call_id = record_start(call, timeout).pk  # one INSERT, committed
        return
    with transaction.atomic():
        approval = use_approval(
            call.approval_id, tool=call.tool, arguments=call.arguments, caller=call.user
        )
        call.call_id = record_start(call, timeout).pk
        record_use(
            approval, caller=call.user, request_id=call.request_id, call_id=call.call_id
        )


def finish(call: CallRecord, ended: Ended) -> AuditEvent:
    """The claimed call's outcome event. (A call the sweep already called
    interrupted: the late outcome is recorded all the same, after it.)"""
    assert call.call_id is not None  # claimed
    return record_call(call, ended)


def sweep_interrupted(now: datetime | None = None) -> int:
    """Record ``interrupted`` for every ``started`` event without an outcome
    made before its call's latest possible end (the longest timeout, the
    pool's margin and ``QUIVER_CALL_SWEEP_MARGIN_S``); returns how many. One
    sweep at a time: another finds the place locked and does nothing."""
    now = now or timezone.now()
    longest = settings.QUIVER_CALL_TIMEOUT_MAX_SECONDS + DEADLINE_MARGIN_S
    cutoff = now - timedelta(seconds=longest + settings.QUIVER_CALL_SWEEP_MARGIN_S)
    CallSweep.objects.get_or_create(pk=1, defaults={"through": now - FIRST_SWEEP})
    with transaction.atomic():
        place = CallSweep.objects.select_for_update(skip_locked=True).filter(pk=1)
        mark = place.first()
        if mark is None or mark.through >= cutoff:
            return 0
        due = (
            AuditEvent.objects.calls_without_outcome()
            .filter(created__gt=mark.through, created__lte=cutoff)
            .select_related("actor")
            .order_by("created", "id")
        )
        swept = 0
        for started in due.iterator(chunk_size=SWEEP_CHUNK):
            _record_interrupted(started)
            swept += 1
        mark.through = cutoff
        mark.save(update_fields=["through"])
    return swept


def _record_interrupted(started: AuditEvent) -> None:
    """The outcome of a call whose process stopped: the start's own actor,
    request and input, naming its ``call_id``."""
    given = started.input if isinstance(started.input, dict) else {}
    timeout = (started.output or {}).get("timeout_s") or 0
    deadline = started.created + timedelta(seconds=timeout + DEADLINE_MARGIN_S)
    record_event(
        EventType.TOOL_CALL,
        actor=started.actor,
        request_id=started.request_id,
        catalog_slug=started.catalog_slug,
        catalog_version=started.catalog_version,
        summary=f"{given.get('tool') or '?'} interrupted",
        input={**given, "call_id": started.pk},
        output={
            "outcome": "interrupted",
            "reason": INTERRUPTED.format(deadline=deadline.isoformat("T", "seconds")),
            "duration_ms": None,
            "result_hash": None,
            "result_bytes": None,
            "is_error": True,
        },
    )
