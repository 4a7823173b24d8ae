"""A source's tools under pinning: what a sync accepts, what waits for review.

A tool's accepted definition is what agents see and calls are validated against, so
a later sync never writes a changed definition: it opens a ``change`` review holding
the upstream's new one, screened and with its risks named, while the tool keeps
serving its pinned one (or is suspended, when the policy says so). New tools wait
for review when the policy says so (``review_new_tools``). Approving a change
applies the reviewed definition as a sync would (``apply_approved``).
The rules: docs/explanation/trust.md, Pinned definitions.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from catalog.choices import ReviewKind, ReviewState
from catalog.models import Catalog, Tool, ToolReview
from catalog.pinning import (
    change_risks,
    comparable,
    definition_of,
    definition_of_tool,
)
from catalog.services import holds
from catalog.spec import ToolSpec
from screening.definitions import screen_definition
from screening.policy import ScreeningPolicy
from selection.models import SelectionSettings
from sources.mapping import synced_spec
from sources.models import Source, SourceTool

HELD = "held"
ORIGIN_LOOKUP = "source_link__source__name"


@dataclass(frozen=True)
class Pinning:
    """What one sync needs to pin: the catalog's policy, its screen, whether
    its new tools wait for review."""

    policy: ScreeningPolicy
    screen: holds.Screen
    review_new: bool

    @classmethod
    def of(cls, source: Source) -> Pinning:
        policy = policy_of(source.catalog)
        return cls(policy, sync_screen(source), reviews_new(source, policy))


def origin(source: Source) -> str:
    return f"source:{source.name}"


def sync_screen(source: Source) -> holds.Screen:
    """How a sync screens: as its source, against the catalog's tools and the
    sources they came from (read once for the whole sync)."""
    return holds.Screen(
        source.catalog_id, origin=source.name, origin_lookup=ORIGIN_LOOKUP
    )


def policy_of(catalog: Catalog) -> ScreeningPolicy:
    return SelectionSettings.objects.stored_for(catalog).screening()


def reviews_new(source: Source, policy: ScreeningPolicy) -> bool:
    """Do this sync's new tools wait for review?"""
    if policy.review_new_tools == "always":
        return True
    return policy.review_new_tools == "after-first-sync" and (
        source.last_success is not None
    )


def hold_new(
    tool: Tool, source: Source, *, actor: Actor, request_id: uuid.UUID | None = None
) -> ToolReview:
    """A new tool held until approved (a screening hold already there becomes
    this review: one decision for the tool)."""
    hold = holds.pending(tool).filter(kind=ReviewKind.FLAGGED).first()
    if hold is not None:
        hold.kind, hold.origin = ReviewKind.NEW, origin(source)
        hold.save(update_fields=["kind", "origin"])
        holds.record_review(hold, "refreshed", actor, request_id)
        return hold
    return holds.open_review(
        tool,
        kind=ReviewKind.NEW,
        proposed=definition_of_tool(tool),
        findings=[],
        origin=origin(source),
        actor=actor,
        request_id=request_id,
    )


def waiting_new(tool: Tool) -> bool:
    """Is this a tool whose first definition is not accepted yet?"""
    return holds.pending(tool).filter(kind=ReviewKind.NEW).exists()


def listed_as_pinned(tool: Tool, *, actor: Actor) -> str:
    """The upstream lists the pinned definition again: a change waiting for
    review is withdrawn (and a suspension lifted). The job item's note."""
    change = holds.pending(tool).filter(kind=ReviewKind.CHANGE).first()
    if change is None:
        return ""
    why = "the upstream lists the pinned definition again"
    holds.withdraw(change, reason=why, actor=actor)
    return f"review {change.pk} withdrawn: {why}"


def propose(
    link: SourceTool,
    spec: ToolSpec,
    upstream: dict[str, Any],
    digest: str,
    *,
    policy: ScreeningPolicy,
    screen: holds.Screen,
    actor: Actor,
) -> str:
    """A changed upstream definition of a pinned tool: its review (opened, or
    the one already waiting for it); the job item's reason."""
    tool = Tool.objects.select_for_update().get(pk=link.tool_id)
    waiting = holds.pending(tool).filter(kind=ReviewKind.CHANGE).first()
    if waiting is not None and waiting.proposal_key == digest:
        return f"changed upstream: waits for review {waiting.pk}"
    refused = ToolReview.objects.filter(
        tool=tool, kind=ReviewKind.CHANGE, proposal_key=digest
    ).filter(state=ReviewState.REFUSED)
    if waiting is None and refused.exists():
        return "changed upstream: this definition was refused in review; pinned kept"
    served, proposed = definition_of_tool(tool), definition_of(spec)
    risks = change_risks(served, proposed)
    returns = ""
    if waiting is not None:
        returns = holds.supersede(waiting, actor=actor, request_id=None)
    review = holds.open_review(
        tool,
        kind=ReviewKind.CHANGE,
        served=served,
        proposed=proposed,
        findings=screen_definition(proposed, screen.neighbours(), screen.origin),
        risks=risks,
        suspend=bool(risks) and policy.risky_change == "suspend",
        origin=origin(link.source),
        proposal_key=digest,
        proposal={"upstream": upstream},
        returns=returns if waiting is not None and waiting.suspended else "",
        actor=actor,
    )
    if tool.status == HELD and not review.suspended and waiting is not None:
        holds.release(tool, waiting, actor=actor, request_id=None)
    state = "suspended until decided" if review.suspended else "pinned one served"
    return f"changed upstream: waits for review {review.pk} ({state})"


def apply_approved(
    review: ToolReview, tool: Tool, actor: Actor, request_id: uuid.UUID | None
) -> ToolSpec:
    """The approved upstream definition over ``tool`` (a sync's spec: the
    curator's fields kept, the flags as the never-loosen rule allows), its link
    now holding that definition as the accepted one."""
    link = SourceTool.objects.select_for_update().get(tool=tool)
    upstream = review.proposal.get("upstream") or {}
    spec = synced_spec(tool.name, upstream, tool, link.upstream, [])
    with transaction.atomic():
        link.upstream, link.upstream_hash = upstream, review.proposal_key
        link.synced = timezone.now()
        link.save(update_fields=["upstream", "upstream_hash", "synced"])
    return spec


def definition_changed(tool: Tool, spec: ToolSpec) -> bool:
    """Would writing ``spec`` change what agents read of ``tool``? (Hints the
    never-loosen rule kept, written out, do not.)"""
    return comparable(definition_of(spec)) != comparable(definition_of_tool(tool))
