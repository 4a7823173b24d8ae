"""The ``tool_call`` audit events of one attempt to call a tool.

A call that is refused or waits for a person is one event (``refused``,
``denied``, ``pending``). A call that reaches for the upstream is two: ``started``,
committed before the upstream is contacted, and its outcome (``ran``, ``failed``,
``timed_out``, or ``interrupted`` when the process running it stopped: the
worker's sweep writes that one), whose input names the started event's id as
``call_id``. The call's ``call_id`` is always the id of its first event."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any

from django.conf import settings

from audit.actors import Caller
from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from calls.hashing import arguments_hash, canonical_json
from calls.observe import call_recorded
from catalog.models import Catalog, Tool
from catalog.pinning import tool_definition_hash
from sources.models import SourceTool

REASON_CHARS = 1000


@dataclass
class CallRecord:
    """One attempt, as its audit events record it."""

    user: Caller
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
    # The id of the attempt's ``started`` event, once it is committed.
    call_id: int | None = None
    # Whom the call is made for (vault.acting), and whose upstream account ran
    # it: a person's connection, or the source's shared credential.
    person: str | None = None
    upstream_account: dict[str, Any] | None = None
    # The person's credential the call runs with (vault), never recorded.
    credential: Any = field(default=None, repr=False)
    _definition: str | None = field(default=None, repr=False)

    def definition_hash(self) -> str | None:
        """The hash of the tool's definition (pinned: what agents read and the
        call was validated against), worked out once per call."""
        if self.tool is None:
            return None
        if self._definition is None:
            self._definition = tool_definition_hash(self.tool)
        return self._definition

    def recorded_input(self) -> dict[str, Any]:
        """The events' input: what was called, with what, how (I22.md's shape)."""
        tool, link = self.tool, self.link
        recorded: dict[str, Any] = {
            "tool": tool.name if tool is not None else self.name,
            "tool_version": tool.version if tool is not None else None,
            # Which definition the call was checked against (catalog.pinning).
            "definition_hash": self.definition_hash(),
            "source": link.source.name if link is not None else None,
            "upstream_name": link.upstream_name if link is not None else None,
        }
        if not getattr(settings, "QUIVER_CALL_ARGUMENTS_HASH_ONLY", False):
            recorded["arguments"] = self.arguments
        recorded.update(
            arguments_hash=arguments_hash(self.arguments),
            selection_id=str(self.selection_id) if self.selection_id else None,
            approval_id=self.approval_id,
            channel=self.channel,
            person=self.person,
        )
        if self.upstream_account is not None:
            recorded["upstream_account"] = self.upstream_account
        if self.call_id is not None:
            recorded["call_id"] = self.call_id
        return recorded


@dataclass(frozen=True)
class Ended:
    """How an attempt ended: its ``outcome`` and why; what the upstream answered
    (``size`` bytes, ``body``); what the result's screening found and did
    (rules and places, never values)."""

    outcome: str
    reason: str
    size: int | None = None
    body: dict[str, Any] | None = None
    screening: dict[str, Any] | None = None


def record_call(call: CallRecord, ended: Ended) -> AuditEvent:
    """An event with the attempt's outcome (in the caller's transaction, if any),
    counted in the metrics as it is recorded."""
    result_hash = None
    if ended.body is not None:
        result_hash = sha256(canonical_json(ended.body).encode()).hexdigest()
    event = _event(
        call,
        ended.outcome,
        {
            "outcome": ended.outcome,
            "reason": ended.reason[:REASON_CHARS],
            "duration_ms": round((time.perf_counter() - call.started) * 1000, 3),
            "result_hash": result_hash,
            "result_bytes": ended.size,
            "is_error": ended.outcome != "ran",
            **({"screening": ended.screening} if ended.screening else {}),
        },
    )
    source = call.link.source.name if call.link is not None else None
    call_recorded(call.catalog.slug, source, ended.outcome)
    return event


def record_start(call: CallRecord, timeout: float) -> AuditEvent:
    """The ``started`` event: the upstream is about to be contacted, for at most
    ``timeout`` seconds."""
    return _event(call, "started", {"outcome": "started", "timeout_s": timeout})


def _event(call: CallRecord, outcome: str, output: dict[str, Any]) -> AuditEvent:
    recorded = call.recorded_input()
    return record_event(
        EventType.TOOL_CALL,
        actor=call.user,
        request_id=call.request_id,
        catalog_slug=call.catalog.slug,
        catalog_version=call.catalog.version,
        summary=f"{recorded['tool']} {outcome}",
        input=recorded,
        output=output,
    )
