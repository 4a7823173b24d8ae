"""Bulk import: a chunk of items written in a few statements, with the outcomes
the one-by-one path (``create_tool`` / ``update_tool`` per item) gives.

Every item is still checked on its own, in document order (schema policy, naming,
``full_clean``), against an in-memory view of the catalog that earlier items of
the chunk have already changed: a name seen twice creates then updates, a provider
name taken by an earlier item is taken. Only the writes are batched: the chunk's
existing tools are read (and locked) in one query, who holds the names it may
take (``catalog.names``: by look) in another, then one ``bulk_update``, one
``bulk_create`` of tools, the names they hold, one of their ``ToolChange`` rows,
one catalog version bump (by the number of changes, as many as the one-by-one
path makes) and one embedding task per ``QUIVER_EMBED_BATCH`` written tools. The
caller runs a chunk in one transaction.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import F
from django.utils import timezone

from audit.actors import Actor, actor_name, stored_user
from audit.choices import EventType
from audit.services import record_event
from catalog import names
from catalog.choices import ChangeAction, ImportOutcome
from catalog.formats import ImportItem
from catalog.models import Catalog, Tool, ToolChange, ToolName
from catalog.names import ToolConflict
from catalog.naming import (
    MAX_NAME_LENGTH,
    first_free_tool_name,
    look,
    looks_of,
    provider_safe_name,
)
from catalog.services import holds, work
from catalog.services.tools import (
    _SET_BY_SERVICE,
    _UPDATED_FIELDS,
    _apply,
    content_hash,
    lock_catalog,
    spec_errors,
    wanted_names,
)
from catalog.spec import ToolSpec
from catalog.versions import hides
from config.fast.copy_rows import copy_insert

_FIELDS = ToolSpec.field_names()


def _spec_json(tool: Tool) -> dict[str, Any]:
    """``tools.spec_json`` without its deep copy (nothing here mutates the values,
    and they are written as JSON at once)."""
    data = {name: getattr(tool, name) for name in _FIELDS}
    data["cost_per_call"] = format(tool.cost_per_call.normalize(), "f")
    return data


def rejection(index: int, name: str | None, exc: Exception) -> dict[str, Any]:
    """The job entry of a refused item, with the reason the single path gives."""
    if isinstance(exc, ValidationError):
        reason = "; ".join(m for msgs in exc.message_dict.values() for m in msgs)
    else:
        reason = str(exc)
    return {"index": index, "name": name, "outcome": "rejected", "reason": reason}


def import_chunk(
    catalog: Catalog, items: list[ImportItem], actor: Actor
) -> list[dict[str, Any]]:
    """Apply the items in order and write the result; one entry per item.

    Call inside a transaction: the existing tools are locked ``FOR UPDATE``.
    A unique constraint can still refuse the batched writes (a concurrent write,
    or provider names swapped between tools of the chunk): the caller then runs
    the chunk again one item at a time."""
    chunk = _Chunk(catalog, actor, [item.spec for item in items if item.spec])
    entries = [chunk.apply(item) for item in items]
    chunk.write()
    chunk.screen()
    return entries


def preview_items(
    catalog: Catalog,
    items: list[ImportItem],
    actor: Actor,
    still_in_time: Callable[[int], bool] = lambda done: True,
) -> list[dict[str, Any]]:
    """``import_chunk``'s entries for the whole document, without its writes: the
    dry run. It takes no lock (a dry run never holds up a writer; it reads the
    catalog as it is). Stops, with the entries so far, once ``still_in_time(done)``
    says no."""
    specs = [item.spec for item in items if item.spec]
    chunk = _Chunk(catalog, actor, specs, locking=False)
    entries: list[dict[str, Any]] = []
    for item in items:
        if not still_in_time(len(entries)):
            break
        entries.append(chunk.apply(item))
    return entries


class _Chunk:
    """The catalog as the chunk's items have left it so far, and what to write."""

    def __init__(
        self,
        catalog: Catalog,
        actor: Actor,
        specs: list[ToolSpec],
        *,
        locking: bool = True,
    ):
        self.catalog = catalog
        self.actor = actor
        self.user = stored_user(actor)
        self.actor_name = actor_name(actor)
        tools = Tool.objects.select_for_update() if locking else Tool.objects.all()
        wanted = {spec.name for spec in specs}
        existing = tools.filter(catalog=catalog, name__in=wanted).order_by("id")
        self.tools: dict[str, Tool] = {tool.name: tool for tool in existing}
        if locking:
            lock_catalog(catalog.pk)
        # Look -> the name of the tool holding it ("" free; None several, held
        # before the rule), and the names of the holders outside the chunk.
        self.holders: dict[str, str | None] = {}
        self.outside: dict[str, dict[str, str]] = {}
        self.loaded: set[str] = set()
        self._load(
            {
                look(text)
                for spec in specs
                for text in (*names.texts(spec).values(), provider_safe_name(spec.name))
            }
        )
        self.new_names: list[str] = []
        self.changed_names: list[str] = []
        self.stored_names: dict[str, dict[str, str]] = {}
        self.changes: list[tuple[str, ToolChange]] = []
        # A held tool's name -> the status the import asked for it.
        self.returns: dict[str, str] = {}

    def _load(self, marks: set[str]) -> None:
        """Who holds these looks in the database (one query)."""
        marks -= self.loaded
        if not marks:
            return
        self.loaded |= marks
        rows = ToolName.objects.filter(catalog=self.catalog, look__in=marks)
        fields = [f"tool__{field}" for field in names.FIELDS]
        for mark, *held in rows.order_by().values_list("look", *fields):
            holder = held[0]  # None: several tools held it before the rule
            self.holders[mark] = holder
            if holder is not None and holder not in self.tools:
                self.outside[holder] = dict(zip(names.FIELDS, held, strict=True))

    def _holder(self, mark: str) -> str | None:
        self._load({mark})
        return self.holders.get(mark, "")

    def apply(self, item: ImportItem) -> dict[str, Any]:
        spec = item.spec
        if spec is None:
            return {"index": item.index, "name": None, "outcome": "rejected"} | {
                "reason": item.error
            }
        try:
            tool = self.tools.get(spec.name)
            self._check(spec, tool)
            outcome = self._create(spec) if tool is None else self._update(tool, spec)
        except (ValidationError, ToolConflict) as exc:
            return rejection(item.index, spec.name, exc)
        return {"index": item.index, "name": spec.name, "outcome": outcome.value} | {
            "reason": ""
        }

    def _check(self, spec: ToolSpec, tool: Tool | None) -> None:
        """``create_tool``'s and ``update_tool``'s checks (``check_spec``, and
        ``catalog.names.refuse`` of each name the tool does not hold yet) against
        the catalog as the chunk has left it so far."""
        errors = spec_errors(spec, new_name=tool is None)
        wanted = wanted_names(spec, tool)
        holders: dict[str, names.Holder] = {}
        for text in wanted.values():
            mark = look(text)
            holder = self._holder(mark)
            if holder is None:
                holders[mark] = names.Holder({}, contested=True)
            elif holder and holder != spec.name:
                held = self.tools.get(holder)
                found = names.names_of(held) if held else self.outside[holder]
                holders[mark] = names.Holder(found)
        names.judge(wanted, holders, errors)

    def _create(self, spec: ToolSpec) -> ImportOutcome:
        holds.refuse_held_status(spec)
        tool = Tool(catalog=self.catalog, created_by=self.user, updated_by=self.user)
        _apply(tool, spec, self._provider_name(spec, None))
        tool.full_clean(
            exclude=_SET_BY_SERVICE, validate_unique=False, validate_constraints=False
        )
        self._keep(tool, {})
        self.new_names.append(tool.name)
        self._change(tool, ChangeAction.CREATE, None)
        return ImportOutcome.CREATED

    def _update(self, tool: Tool, spec: ToolSpec) -> ImportOutcome:
        spec, returns = holds.keep_hold(tool, spec)
        if returns:
            self.returns[spec.name] = returns
        if content_hash(spec) == tool.content_hash and (
            not spec.provider_name or spec.provider_name == tool.provider_name
        ):
            return ImportOutcome.UNCHANGED
        before = _spec_json(tool)
        new = copy.copy(tool)  # the kept state stays whole if this one is refused
        _apply(new, spec, self._provider_name(spec, tool))
        new.version += 1
        new.updated_by = self.user
        new.full_clean(
            exclude=_SET_BY_SERVICE, validate_unique=False, validate_constraints=False
        )
        self._keep(new, names.texts(tool))
        if new.pk is not None and new.name not in self.changed_names:
            self.changed_names.append(new.name)
            self.stored_names[new.name] = names.texts(tool)
        self._change(new, ChangeAction.UPDATE, before)
        return ImportOutcome.UPDATED

    def _provider_name(self, spec: ToolSpec, tool: Tool | None) -> str:
        """What ``tools._provider_name`` answers, from the in-memory view."""
        if spec.provider_name:
            return spec.provider_name
        if tool is not None and tool.provider_name and tool.name == spec.name:
            return tool.provider_name

        def free(candidate: str) -> bool:
            return self._holder(look(candidate)) in ("", spec.name)

        base = provider_safe_name(spec.name)
        return first_free_tool_name(base, free, MAX_NAME_LENGTH)

    def _keep(self, tool: Tool, before: dict[str, str]) -> None:
        """The tool as the chunk leaves it, holding its names' looks."""
        had = looks_of(*before.values())
        now = looks_of(*names.texts(tool).values())
        for mark in had - now:
            if self.holders.get(mark) == tool.name:
                self.holders[mark] = ""
        for mark in now - had:
            self.loaded.add(mark)
            self.holders[mark] = tool.name
        self.tools[tool.name] = tool

    def _change(self, tool: Tool, action: str, before: dict[str, Any] | None) -> None:
        change = ToolChange(
            catalog_id=self.catalog.pk,
            tool_name=tool.name,
            action=action,
            version=tool.version,
            before=before,
            after=_spec_json(tool),
            actor=self.user,
            actor_name=self.actor_name,
        )
        self.changes.append((tool.name, change))

    def _bump(self, now: Any) -> int:
        """The catalog version the chunk's changes make (moved by their count)."""
        catalogs = Catalog.objects.filter(pk=self.catalog.pk)
        if self.changes:
            catalogs.update(version=F("version") + len(self.changes), updated=now)
        return int(catalogs.values_list("version", flat=True).get())

    def _audit(self, rows: list[ToolChange], version: int) -> None:
        """The chunk's changes in the one audit chain, in the chunk's transaction."""
        record_event(
            EventType.TOOL_CHANGED,
            actor=self.actor,
            request_id=None,
            catalog_slug=self.catalog.slug,
            catalog_version=version,
            many=[
                {
                    "summary": f"tool {c.tool_name!r} v{c.version}: {c.action}",
                    "input": {
                        "action": c.action,
                        "tool": c.tool_name,
                        "before": c.before,
                    },
                    "output": {
                        "change_id": c.pk,
                        "version": c.version,
                        "after": c.after,
                    },
                }
                for c in rows
            ],
        )

    def screen(self) -> None:
        """Every tool the chunk wrote (or asked to return to a status) screened,
        the flagged ones held for review (``holds.screen_many``)."""
        touched = {name for name, _ in self.changes} | set(self.returns)
        written = [self.tools[name] for name in sorted(touched)]
        holds.screen_many(
            written,
            actor=self.actor,
            screen=holds.Screen(self.catalog.pk),
            origin="import",
            returns=self.returns,
        )

    def write(self) -> None:
        """The version first (every change of the chunk makes the one it ends
        at), then the updates (a provider name given up is free for a new tool),
        the new tools, their change records, the audit rows, the embeddings."""
        now = timezone.now()
        version = self._bump(now)
        changed = [self.tools[name] for name in self.changed_names]
        for tool in changed:
            tool.updated = now
        for name, _change in self.changes:
            self.tools[name].changed_version = version
        Tool.objects.bulk_update(changed, fields=[*_UPDATED_FIELDS, "changed_version"])
        copy_insert([self.tools[name] for name in self.new_names], with_ids=True)
        held: list[tuple[Tool, dict[str, str] | None]] = [
            (self.tools[n], self.stored_names[n]) for n in self.changed_names
        ]
        held += [(self.tools[name], None) for name in self.new_names]
        names.hold_many(self.catalog.pk, held)
        rows = []
        for name, change in self.changes:
            change.tool_id = self.tools[name].pk
            change.catalog_version = version
            change.hides = hides(change.before, change.after)
            rows.append(change)
        copy_insert(rows, with_ids=True)
        if rows:
            self._audit(rows, version)
        written = sorted(self.tools[name].pk for name in {n for n, _ in self.changes})
        for tool_id in written[:: int(settings.QUIVER_EMBED_BATCH)]:
            work.enqueue_embedding(tool_id)
