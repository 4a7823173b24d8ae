"""Holding tool definitions for review: every write screened, a flagged one held.

After every create or update (an edit, the bulk import, a sync) the definition goes
through ``screening``; a hit holds the tool (status ``held``: no agent path offers,
shows or runs it) with a ``flagged`` review, unless a curator allowed this very
definition, and a definition that no longer matches withdraws it. Only a review sets
or lifts ``held``. Every opening, refresh and withdrawal is a ``tool_review`` event
in the caller's transaction. The rules: docs/explanation/trust.md.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet, Value
from django.db.models.functions import Left
from django.utils import timezone

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
from catalog.choices import ReviewKind, ReviewState, ToolStatus
from catalog.models import Tool, ToolReview
from catalog.pinning import (
    definition_hash,
    definition_of_tool,
    diff_hash,
)
from catalog.services.changes import write_status
from catalog.spec import ToolSpec
from config.exceptions import Conflict
from screening.definitions import Neighbourhood, screen_definition
from screening.rules import Finding

HELD = ToolStatus.HELD.value
HELD_RULE = "status: 'held' is set by a review only, never by a write"
HELD_CONFLICT = (
    "status: the tool is held for review ({kind}); approve, allow or refuse the "
    "review first (the status asked for is kept as the one it returns to)"
)
# The catalog's tools the near-copy and mention rules compare a definition
# with: the most recently changed this many, each description's first part.
NEIGHBOURS_MAX = 20_000
DESCRIPTION_READ = 4_000
HOLDING = (ReviewKind.NEW, ReviewKind.FLAGGED)


@dataclass
class Screen:
    """How one write path screens definitions: its origin (a source's name, ""
    for a curator's tool) and the catalog's other tools, read once on first
    use and kept up to date as the path writes (``noted``)."""

    catalog_id: int
    origin: str = ""
    # The ORM path from a tool to its origin's name (a sync gives its own).
    origin_lookup: str = ""
    built: Neighbourhood | None = field(default=None, repr=False)

    def neighbours(self) -> Neighbourhood:
        if self.built is None:
            self.built = neighbourhood(self.catalog_id, self.origin_lookup)
        return self.built

    def noted(self, tool: Tool) -> None:
        if self.built is not None:
            description = tool.description[:DESCRIPTION_READ]
            self.built.add(tool.name, description, self.origin, tool.parameters)


def neighbourhood(catalog_id: int, origin_lookup: str = "") -> Neighbourhood:
    """The catalog's tools as the definition rules read them (one query)."""
    rows = Tool.objects.filter(catalog_id=catalog_id).order_by("-updated")
    text = Left("description", DESCRIPTION_READ)
    if origin_lookup:
        found = rows.values_list("name", text, origin_lookup, "parameters")
    else:
        found = rows.values_list("name", text, Value(""), "parameters")
    return Neighbourhood.of(
        (n, d or "", o or "", p) for n, d, o, p in found[:NEIGHBOURS_MAX].iterator()
    )


def refuse_held_status(spec: ToolSpec) -> None:
    if spec.status == HELD:
        raise ValidationError({"status": [HELD_RULE]})


def keep_hold(tool: Tool, spec: ToolSpec) -> tuple[ToolSpec, str]:
    """The spec to write over ``tool``: a held tool stays held, and the status
    the write asked for is returned (where the tool goes once decided; "" if
    none); any other tool may not be written as held."""
    if tool.status != HELD:
        refuse_held_status(spec)
        return spec, ""
    if spec.status == HELD:
        return spec, ""
    return replace(spec, status=HELD), spec.status


def returns_to(
    tool: Tool, status: str, *, actor: Actor, request_id: uuid.UUID | None
) -> bool:
    """For a status write: refuse ``held``; on a held tool, keep ``status`` as
    the one it returns to (True: done, nothing else to write)."""
    if status == HELD:
        raise ValidationError({"status": [HELD_RULE]})
    if tool.status != HELD:
        return False
    review = holding_review(tool)
    if review is None:  # held with no review: never leave it so
        raise Conflict("status", HELD_CONFLICT.format(kind="none open"))
    if review.status_before != status:
        review.status_before = status
        review.save(update_fields=["status_before"])
        record_review(review, "returns_to", actor, request_id)
    return True


def screen_many(
    tools: list[Tool],
    *,
    actor: Actor,
    screen: Screen,
    origin: str,
    returns: dict[str, str],
) -> None:
    """``screen_written`` for a batch just written (a bulk import's chunk): one
    query for the pending holds of those held before it (none when it made
    them all); the per-tool path only for a tool flagged, held or asked to
    return to another status."""
    were_held = [tool for tool in tools if tool.status == HELD]
    held = set(
        ToolReview.objects.filter(
            tool__in=were_held, state=ReviewState.PENDING, kind__in=HOLDING
        ).values_list("tool_id", flat=True)
        if were_held
        else ()
    )
    for tool in tools:
        definition = definition_of_tool(tool)
        flagged = screen_definition(definition, screen.neighbours(), screen.origin)
        if flagged or tool.pk in held or returns.get(tool.name):
            screen_written(
                tool,
                actor=actor,
                screen=screen,
                origin=origin,
                returns=returns.get(tool.name, ""),
            )


def pending(tool: Tool) -> QuerySet[ToolReview]:
    return ToolReview.objects.filter(tool=tool, state=ReviewState.PENDING)


def holding_review(tool: Tool) -> ToolReview | None:
    """The pending review that keeps ``tool`` out of service, if any."""
    for review in pending(tool).order_by("id"):
        if review.kind in HOLDING or review.suspended:
            return review
    return None


def accepted(tool: Tool, digest: str) -> bool:
    """Did a curator approve or allow exactly this definition for this tool?"""
    return ToolReview.objects.filter(
        tool=tool,
        proposed_hash=digest,
        state__in=[ReviewState.APPROVED, ReviewState.ALLOWED],
    ).exists()


def screen_written(
    tool: Tool,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    screen: Screen | None = None,
    origin: str = "edit",
    returns: str = "",
) -> ToolReview | None:
    """Screen ``tool`` as just written; hold it when flagged (see the module's
    docstring). ``returns``: the status a write asked for on a held tool."""
    screen = screen or Screen(tool.catalog_id)
    definition = definition_of_tool(tool)
    digest = definition_hash(definition)
    findings = screen_definition(definition, screen.neighbours(), screen.origin)
    screen.noted(tool)
    hold = pending(tool).filter(kind__in=HOLDING).first()
    if hold is not None and returns:
        hold.status_before = returns
    if not findings or accepted(tool, digest):
        if hold is not None and hold.kind == ReviewKind.FLAGGED:
            why = "the definition no longer matches any rule"
            withdraw(hold, reason=why, actor=actor, request_id=request_id)
            return None
        findings = []
    if hold is not None:
        return refresh(hold, definition, findings, actor, request_id)
    if not findings:
        return None
    return open_review(
        tool,
        kind=ReviewKind.FLAGGED,
        proposed=definition,
        findings=findings,
        origin=origin if not screen.origin else f"source:{screen.origin}",
        actor=actor,
        request_id=request_id,
    )


def open_review(
    tool: Tool,
    *,
    kind: str,
    proposed: dict[str, Any],
    findings: list[Finding],
    origin: str,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    served: dict[str, Any] | None = None,
    risks: list[str] | None = None,
    suspend: bool = False,
    proposal_key: str = "",
    proposal: dict[str, Any] | None = None,
    returns: str = "",
) -> ToolReview:
    """A new pending review of ``tool``; the tool is held when the review holds
    it (``new``, ``flagged``, or a ``change`` with ``suspend``); ``returns``:
    the status it goes back to (by default the one it has, or the one the
    review already holding it keeps)."""
    review = ToolReview(
        catalog_id=tool.catalog_id,
        tool=tool,
        tool_name=tool.name,
        kind=kind,
        served=served,
        proposed=proposed,
        served_hash=definition_hash(served) if served is not None else "",
        proposed_hash=definition_hash(proposed),
        diff_hash=diff_hash(served, proposed),
        findings=[f.as_dict() for f in findings],
        risks=risks or [],
        suspended=suspend,
        origin=origin,
        proposal_key=proposal_key,
        proposal=proposal or {},
    )
    holds = kind in HOLDING or suspend
    if holds:
        held_by = holding_review(tool)
        review.status_before = returns or (
            held_by.status_before if held_by is not None else tool.status
        )
    review.full_clean(exclude=["tool", "catalog", "decided_by"])
    review.save()
    record_review(review, "opened", actor, request_id)
    if holds and tool.status != HELD:  # the caller's row, locked by the caller
        why = _why(review)
        write_status(tool, HELD, actor=actor, request_id=request_id, reason=why)
    return review


def refresh(
    review: ToolReview,
    definition: dict[str, Any],
    findings: list[Finding],
    actor: Actor,
    request_id: uuid.UUID | None,
) -> ToolReview:
    """A pending review of the tool's own definition brought up to date with
    what was just written (its findings too)."""
    found = [f.as_dict() for f in findings]
    digest = definition_hash(definition)
    if digest == review.proposed_hash and found == review.findings:
        review.save(update_fields=["status_before"])
        return review
    review.proposed, review.proposed_hash, review.findings = definition, digest, found
    review.diff_hash = diff_hash(review.served, definition)
    review.save(
        update_fields=[
            "proposed",
            "proposed_hash",
            "findings",
            "diff_hash",
            "status_before",
        ]
    )
    record_review(review, "refreshed", actor, request_id)
    return review


def withdraw(
    review: ToolReview,
    *,
    reason: str,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> None:
    """Close a pending review undecided (its tool changed, went back, or was
    deleted); the tool returns to service if nothing else holds it."""
    review.state, review.reason = ReviewState.WITHDRAWN, reason[:500]
    review.decided = timezone.now()
    review.save(update_fields=["state", "reason", "decided"])
    record_review(review, "withdrawn", actor, request_id)
    if review.tool is not None:
        release(review.tool, review, actor=actor, request_id=request_id)


def supersede(review: ToolReview, *, actor: Actor, request_id: uuid.UUID | None) -> str:
    """Close a pending change review that a newer proposal replaces, the tool
    left as it is (the new review takes its place); the status it kept."""
    review.state, review.decided = ReviewState.WITHDRAWN, timezone.now()
    review.reason = "superseded by a newer definition from the same origin"
    review.save(update_fields=["state", "reason", "decided"])
    record_review(review, "withdrawn", actor, request_id)
    return review.status_before


def withdraw_all(tool: Tool, *, actor: Actor, request_id: uuid.UUID | None) -> None:
    """Every pending review of a tool being deleted (no status to restore)."""
    for review in pending(tool):
        review.state, review.reason = ReviewState.WITHDRAWN, "the tool was deleted"
        review.decided = timezone.now()
        review.save(update_fields=["state", "reason", "decided"])
        record_review(review, "withdrawn", actor, request_id)


def release(
    tool: Tool,
    review: ToolReview,
    *,
    actor: Actor,
    request_id: uuid.UUID | None,
    status: str | None = None,
) -> Tool:
    """``review`` no longer holds ``tool``: back to ``status`` (by default the
    one it had or was asked for meanwhile), unless another pending review still
    holds it, which then carries that status."""
    back = status or review.status_before or ToolStatus.ACTIVE
    tool = Tool.objects.select_for_update().get(pk=tool.pk)
    other = holding_review(tool)
    if other is not None:
        if other.status_before != back:
            other.status_before = back
            other.save(update_fields=["status_before"])
        return tool
    if tool.status != HELD or back == HELD:
        return tool
    why = f"review {review.pk} {review.state}"
    return write_status(tool, back, actor=actor, request_id=request_id, reason=why)


def _why(review: ToolReview) -> str:
    rules = sorted({f["rule"] for f in review.findings})
    if rules:
        return f"held for review {review.pk}: {', '.join(rules)}"[:500]
    if review.kind == ReviewKind.NEW:
        return f"held for review {review.pk}: new from {review.origin}"[:500]
    return f"held for review {review.pk}: {'; '.join(review.risks)}"[:500]


def record_review(
    review: ToolReview, action: str, actor: Actor, request_id: uuid.UUID | None
) -> None:
    """One ``tool_review`` event: what happened to which review, the hashes of
    both definitions and of the change, the rules and risks named."""
    catalog = review.catalog
    record_event(
        EventType.TOOL_REVIEW,
        actor=actor,
        request_id=request_id,
        catalog_slug=catalog.slug,
        catalog_version=catalog.version,
        summary=f"tool {review.tool_name!r}: {review.kind} review {action}",
        input={
            "review_id": review.pk,
            "tool": review.tool_name,
            "kind": review.kind,
            "action": action,
            "origin": review.origin,
            "served_hash": review.served_hash,
            "proposed_hash": review.proposed_hash,
            "diff_hash": review.diff_hash,
            "rules": sorted({f["rule"] for f in review.findings}),
            "risks": review.risks,
            **({"reason": review.reason} if review.reason else {}),
        },
        output={
            "state": review.state,
            "suspended": review.suspended,
            "returns_to": review.status_before,
        },
    )
