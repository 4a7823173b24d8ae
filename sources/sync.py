"""A source's sync: its ``tools/list`` (every page) becomes catalog tools, as a diff.

Run by a Job of kind ``sync``, one item per upstream tool, each judged on its own and
written through ``catalog.services.tools`` with its ``SourceTool`` link in one
transaction, so a hostile or broken listing costs only its bad items and running the
same sync twice gives the same catalog. The rules: docs/how-to/sources.md, What a
sync does.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from audit.actors import Actor
from catalog.choices import ImportOutcome, ToolStatus
from catalog.models import Tool
from catalog.services import holds
from catalog.services.tools import (
    ToolConflict,
    create_tool,
    set_tool_status,
    update_tool,
)
from config.jsonparse import printable_tree
from jobs import services as jobs
from jobs.models import Job
from sources import accounts
from sources.mapping import (
    new_tool_names,
    synced_spec,
    tool_name,
    unstorable,
    unsupported,
    upstream_hash,
)
from sources.models import Source, SourceStatus, SourceTool
from sources.pinning import (
    Pinning,
    definition_changed,
    hold_new,
    listed_as_pinned,
    origin,
    propose,
    waiting_new,
)
from sources.secrets import HeadersUnreadable
from sources.upstream import Challenged, UpstreamError, list_tools

log = logging.getLogger(__name__)
GONE, BACK, REJECTED = "gone", "back", ImportOutcome.REJECTED.value
HELD = "held"
OUTCOMES = [*(o.value for o in ImportOutcome), GONE, BACK, HELD]


def run_sync(job: Job) -> Job:
    """Run (or run again) the sync ``job`` describes; the job is claimed."""
    source = Source.objects.filter(pk=job.options.get("source_id")).first()
    if source is None:
        jobs.fail_job(job, "source: deleted before its sync ran")
        return job
    _set_status(source, SourceStatus.SYNCING)
    try:
        listing = list_tools(source)
    except Challenged as exc:
        _challenged(source, job, exc)
        return job
    except accounts.NoAccount as exc:
        _waiting(source, job, str(exc))
        return job
    except (UpstreamError, HeadersUnreadable) as exc:
        _failed(source, job, str(exc))
        return job
    job.items, job.counts = [], dict.fromkeys(OUTCOMES, 0)
    job.total, job.done = len(listing.tools), 0
    with jobs.keep_alive(job):
        apply_listing(source, listing.tools, job, job.created_by)
    _succeeded(source, job, listing.server)
    return jobs.finish_job(job, "items", "counts", "done", "total")


def apply_listing(
    source: Source, listed: list[dict[str, Any]], job: Job, actor: Actor
) -> None:
    """The diff between the source's links and ``listed``, written tool by tool."""
    links = {
        link.upstream_name: link
        for link in SourceTool.objects.filter(source=source).select_related("tool")
    }
    seen: set[str] = set()
    renamed = _safe_names(source, listed, links)
    pin = Pinning.of(source)
    for index, upstream in enumerate(listed):
        name = upstream.get("name")
        if not isinstance(name, str) or not name or name in seen:
            reason = "name: missing, or listed twice by the upstream"
            _record(
                job,
                {"index": index, "name": None, "outcome": REJECTED, "reason": reason},
            )
            continue
        seen.add(name)
        entry = _judge(source, links.get(name), upstream, actor, pin, renamed.get(name))
        _record(job, {"index": index, **entry})
    gone = [link for name, link in links.items() if name not in seen and not link.gone]
    job.total += len(gone)
    for offset, link in enumerate(gone):
        _mark_gone(link, actor)
        entry = {"index": len(listed) + offset, "name": link.tool.name, "outcome": GONE}
        _record(job, {**entry, "reason": f"{link.upstream_name} is no longer listed"})


def _judge(
    source: Source,
    link: SourceTool | None,
    upstream: dict[str, Any],
    actor: Actor,
    pin: Pinning,
    renamed: tuple[str, str] | None,
) -> dict[str, Any]:
    """One listed tool's outcome, judged on its own (see the module docstring)."""
    name = str(upstream["name"])
    refused = unstorable(upstream)
    if refused:
        plain = tool_name(source.name, name)
        return {"name": plain, "outcome": REJECTED, "reason": refused}
    why = unsupported(upstream)
    if why:
        return _unsupported(source, link, name, why, actor)
    return _sync_one(source, link, upstream, actor, pin, renamed)


def _unsupported(
    source: Source, link: SourceTool | None, name: str, why: str, actor: Actor
) -> dict[str, Any]:
    """A tool Quiver cannot run: a new one is rejected; one synced before is
    taken out of service as if gone (never offered, never called; back once the
    upstream lists it callable again)."""
    if link is None:
        return {
            "name": tool_name(source.name, name),
            "outcome": REJECTED,
            "reason": why,
        }
    if not link.gone:
        _mark_gone(link, actor)
        return {"name": link.tool.name, "outcome": GONE, "reason": why}
    return {
        "name": link.tool.name,
        "outcome": ImportOutcome.UNCHANGED.value,
        "reason": why,
    }


def _record(job: Job, entry: dict[str, Any]) -> None:
    """One item's outcome, saved with the job's progress (texts an upstream
    gave escaped where no database text could hold them)."""
    entry = printable_tree(entry)
    job.items.append(entry)
    job.counts[entry["outcome"]] = job.counts.get(entry["outcome"], 0) + 1
    job.done = len(job.items)
    jobs.save_progress(job, "items", "counts", "done", "total")


def _safe_names(
    source: Source, listed: list[dict[str, Any]], links: dict[str, SourceTool]
) -> dict[str, tuple[str, str]]:
    """The new tools' names that break the rule, each with its safe name and
    the job's note (sources.mapping.new_tool_names)."""
    listed_names = [u.get("name") for u in listed if not unstorable(u)]
    new = [n for n in listed_names if isinstance(n, str) and n and n not in links]
    return new_tool_names(source.name, source.catalog_id, list(dict.fromkeys(new)))


def _sync_one(
    source: Source,
    link: SourceTool | None,
    upstream: dict[str, Any],
    actor: Actor,
    pin: Pinning,
    renamed: tuple[str, str] | None = None,
) -> dict[str, Any]:
    upstream_name = str(upstream["name"])
    plain = tool_name(source.name, upstream_name)
    name = link.tool.name if link is not None else renamed[0] if renamed else plain
    digest = upstream_hash(upstream)
    try:
        with transaction.atomic():
            if link is None:
                entry = _create(source, name, upstream, digest, actor, pin, renamed)
            else:
                entry = _update(link, upstream, digest, actor, pin)
    except (ValidationError, ToolConflict, IntegrityError, DataError) as exc:
        # Each item is judged on its own: what the database refuses rolls back
        # this item only, and is its reason.
        entry = {"name": name, "outcome": REJECTED, "reason": _why(exc)}
    if link is None and renamed:
        reason = "; ".join(part for part in (renamed[1], entry["reason"]) if part)
        entry = {**entry, "reason": reason, "renamed_from": plain}
    return entry


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and hasattr(exc, "error_dict"):
        return "; ".join(m for msgs in exc.message_dict.values() for m in msgs)
    if isinstance(exc, IntegrityError):
        return "name: another tool of the catalog holds this name or provider name"
    if isinstance(exc, DataError):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "refused"
        return f"tool: the database refused to store it ({first})"
    return "; ".join(getattr(exc, "messages", [])) or str(exc)


def _create(
    source: Source,
    name: str,
    upstream: dict[str, Any],
    digest: str,
    actor: Actor,
    pin: Pinning,
    renamed: tuple[str, str] | None,
) -> dict[str, Any]:
    if Tool.objects.filter(catalog_id=source.catalog_id, name=name).exists():
        raise ToolConflict(
            "name",
            f"name: the catalog already has a tool named {name!r} that did not "
            f"come from source {source.name!r}",
        )
    original = tool_name(source.name, str(upstream["name"])) if renamed else ""
    spec = synced_spec(name, upstream, None, None, original_name=original)
    tool = create_tool(
        source.catalog, spec, actor=actor, screen=pin.screen, origin=origin(source)
    )
    SourceTool.objects.create(
        source=source,
        tool=tool,
        upstream_name=str(upstream["name"]),
        upstream=upstream,
        upstream_hash=digest,
        synced=timezone.now(),
    )
    if pin.review_new:
        hold_new(tool, source, actor=actor)
    review = holds.holding_review(tool)
    if review is not None:
        reason = f"created, held for review {review.pk} ({review.kind})"
        return {"name": name, "outcome": HELD, "reason": reason}
    return {"name": name, "outcome": ImportOutcome.CREATED.value, "reason": ""}


def _update(
    link: SourceTool,
    upstream: dict[str, Any],
    digest: str,
    actor: Actor,
    pin: Pinning,
) -> dict[str, Any]:
    tool, outcome, note = link.tool, ImportOutcome.UNCHANGED.value, ""
    held: list[str] = []
    accepted = digest
    if digest == link.upstream_hash:
        note = listed_as_pinned(tool, actor=actor)
    else:
        spec = synced_spec(tool.name, upstream, tool, link.upstream, held)
        if definition_changed(tool, spec) and not waiting_new(tool):
            note = propose(
                link,
                spec,
                upstream,
                digest,
                policy=pin.policy,
                screen=pin.screen,
                actor=actor,
            )
            outcome, accepted, held = HELD, link.upstream_hash, []
        else:
            result = update_tool(
                tool, spec, actor=actor, screen=pin.screen, origin=origin(link.source)
            )
            tool = result.tool or tool
            outcome = result.outcome.value
    back = link.gone
    if back and tool.status == ToolStatus.DEPRECATED:
        tool = set_tool_status(tool, ToolStatus.ACTIVE, actor=actor).tool or tool
    link.tool = tool
    if back or accepted != link.upstream_hash:
        if accepted != link.upstream_hash:
            link.upstream, link.upstream_hash = upstream, digest
        link.gone, link.synced = False, timezone.now()
        link.save(update_fields=["gone", "upstream", "upstream_hash", "synced"])
    note = "; ".join(n for n in (note, _held_note(held)) if n)
    if back:
        reason = f"listed again ({outcome})" + (f"; {note}" if note else "")
        return {"name": tool.name, "outcome": BACK, "reason": reason}
    return {"name": tool.name, "outcome": outcome, "reason": note}


def _held_note(held: list[str]) -> str:
    if not held:
        return ""
    return (
        f"the upstream's hints would loosen {', '.join(held)}: kept as they were; "
        "a curator may change them"
    )


def _mark_gone(link: SourceTool, actor: Actor) -> None:
    """No longer offered (deprecated unless a curator already took it out of
    service), kept for audit; a tool gone is never called."""
    with transaction.atomic():
        if link.tool.status == ToolStatus.ACTIVE:
            set_tool_status(link.tool, ToolStatus.DEPRECATED, actor=actor)
        link.gone = True
        link.synced = timezone.now()
        link.save(update_fields=["gone", "synced"])


def _set_status(source: Source, status: str, **fields: Any) -> None:
    source.status = status
    for field, value in fields.items():
        setattr(source, field, value)
    source.save(update_fields=["status", *fields, "updated"])


def _failed(source: Source, job: Job, why: str) -> None:
    log.warning("source %s: sync failed: %s", source.pk, why)
    _set_status(
        source,
        SourceStatus.ERROR,
        last_synced=timezone.now(),
        last_outcome="failed",
        last_error=why,
    )
    jobs.fail_job(job, f"source {source.name!r}: {why}")


def _challenged(source: Source, job: Job, exc: Challenged) -> None:
    """The server asks for OAuth: discovered and registered, the source waits
    for a person (``authorize``); a challenge that cannot be followed fails the
    sync naming why."""
    try:
        waiting = accounts.lent().challenged(source, exc.challenge)
    except ValueError as problem:
        _failed(source, job, f"{exc}; {problem}"[:1000])
        return
    _waiting(source, job, waiting)


def _waiting(source: Source, job: Job, why: str) -> None:
    log.info("source %s: waits for a person's authorization", source.pk)
    _set_status(
        source,
        SourceStatus.AUTHORIZE,
        last_synced=timezone.now(),
        last_outcome="waiting for a person's authorization",
        last_error=why[:1000],
    )
    jobs.fail_job(job, f"source {source.name!r}: {why}"[:1000])


def _succeeded(source: Source, job: Job, server: str) -> None:
    counts = Counter({k: v for k, v in job.counts.items() if v})
    summary = ", ".join(f"{v} {k}" for k, v in counts.items()) or "nothing listed"
    rejected = [i["reason"] for i in job.items if i["outcome"] == REJECTED]
    now = timezone.now()
    _set_status(
        source,
        SourceStatus.OK,
        last_synced=now,
        last_success=now,
        last_outcome=(f"{server}: {summary}" if server else summary)[:200],
        last_error=f"{len(rejected)} rejected; first: {rejected[0]}"
        if rejected
        else "",
        tool_count=SourceTool.objects.filter(source=source, gone=False).count(),
    )
