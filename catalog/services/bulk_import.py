"""Bulk import: a chunk of items written in a few statements, with the outcomes
the one-by-one path (``create_tool`` / ``update_tool`` per item) gives.

Every item is still checked on its own, in document order (schema policy, naming,
``full_clean``), against an in-memory view of the catalog that earlier items of
the chunk have already changed: a name seen twice creates then updates, a provider
name taken by an earlier item is taken. Only the writes are batched: the chunk's
existing tools are read (and locked) in one query, the provider names it may
collide with in another, then one ``bulk_update``, one ``bulk_create`` of tools,
one of their ``ToolChange`` rows, one catalog version bump (by the number of
changes, as many as the one-by-one path makes) and one embedding task per
``QUIVER_EMBED_BATCH`` written tools. The caller runs a chunk in one transaction.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import F
from django.utils import timezone

from audit.choices import EventType
from audit.services import record_events
from catalog.access import Actor, actor_name, stored_user
from catalog.choices import ChangeAction, ImportOutcome
from catalog.formats import ImportItem
from catalog.models import Catalog, Tool, ToolChange
from catalog.naming import (
    COLLISION_PREFIX_LENGTH,
    assign_provider_names,
    confusable_message,
    confusable_names,
    provider_safe_name,
    skeleton,
)
from catalog.services import jobs
from catalog.services.tools import (
    _SET_BY_SERVICE,
    _UPDATED_FIELDS,
    ToolConflict,
    _apply,
    content_hash,
    lock_catalog,
    new_original_name,
    spec_errors,
)
from catalog.spec import ToolSpec
from catalog.versions import hides
from config.copy_rows import copy_insert

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
        self.locking = locking
        self.actor = actor
        self.user = stored_user(actor)
        self.actor_name = actor_name(actor)
        names = {spec.name for spec in specs}
        tools = Tool.objects.select_for_update() if locking else Tool.objects.all()
        existing = tools.filter(catalog=catalog, name__in=names).order_by("id")
        self.tools: dict[str, Tool] = {tool.name: tool for tool in existing}
        wanted = {spec.provider_name for spec in specs if spec.provider_name}
        wanted |= {provider_safe_name(spec.name) for spec in specs}
        # provider name -> the (unique) name of the tool holding it
        self.owners: dict[str, str] = dict(
            Tool.objects.filter(catalog=catalog, provider_name__in=wanted)
            .order_by()
            .values_list("provider_name", "name")
        )
        self.loaded_prefixes: set[str] = set()
        self.new_names: list[str] = []
        self.changed_names: list[str] = []
        self.changes: list[tuple[str, ToolChange]] = []
        self.skeletons: dict[str, set[tuple[str, str, bool]]] | None = None
        self.provider_owners: dict[str, str] | None = None

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
        """``check_spec``, and for a new name or original name ``check_new_name``'s
        refusal of a look-alike of any other tool's name or original name in the
        catalog (earlier items of the chunk too)."""
        errors = spec_errors(spec, new_name=tool is None)
        original = new_original_name(spec, tool)
        clashes = {"name": self._lookalikes(spec.name)} if tool is None else {}
        if original:
            clashes["original_name"] = self._lookalikes(original, spec.name, True)
        for field, clash in clashes.items():
            if clash:
                value = spec.name if field == "name" else original
                message = confusable_message(value, clash, field)
                errors[field] = [*errors.get(field, []), message]
        if errors:
            raise ValidationError(errors)

    def _lookalikes(
        self, value: str, owner: str | None = None, exact: bool = False
    ) -> list[str]:
        """Other tools' names and original names that look like ``value``: a
        name equal to another's is a conflict, not a look-alike, unless ``exact``
        (an original name); ``owner``'s own are not others'."""
        owner = value if owner is None else owner
        found = self._identities().get(skeleton(value), ())
        return sorted(
            {
                text
                for text, holder, is_original in found
                if holder != owner and (exact or is_original or text != value)
            }
        )

    def _identities(self) -> dict[str, set[tuple[str, str, bool]]]:
        """Skeleton -> (name or original name, its tool's name, is it an original
        name), for every tool as the chunk has left them so far."""
        if self.skeletons is None:
            # The lock check_new_name takes, then every name once per chunk.
            if self.locking:
                lock_catalog(self.catalog.pk)
            self.skeletons = {}
            rows = Tool.objects.filter(catalog=self.catalog).order_by()
            pairs = rows.values_list("name", "original_name")
            for name, original in pairs.iterator(chunk_size=5000):
                if name not in self.tools:
                    self._index(name, original)
            for name, tool in self.tools.items():
                self._index(name, tool.original_name)
        return self.skeletons

    def _index(self, name: str, original: str) -> None:
        assert self.skeletons is not None
        self.skeletons.setdefault(skeleton(name), set()).add((name, name, False))
        if original:
            entry = (original, name, True)
            self.skeletons.setdefault(skeleton(original), set()).add(entry)

    def _create(self, spec: ToolSpec) -> ImportOutcome:
        tool = Tool(catalog=self.catalog, created_by=self.user, updated_by=self.user)
        _apply(tool, spec, self._provider_name(spec, None))
        tool.full_clean(
            exclude=_SET_BY_SERVICE, validate_unique=False, validate_constraints=False
        )
        self._keep(tool, "")
        self.new_names.append(tool.name)
        if self.skeletons is not None:
            self._index(tool.name, tool.original_name)
        self._change(tool, ChangeAction.CREATE, None)
        return ImportOutcome.CREATED

    def _update(self, tool: Tool, spec: ToolSpec) -> ImportOutcome:
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
        self._keep(new, tool.provider_name)
        if self.skeletons is not None and new.original_name != tool.original_name:
            old = (tool.original_name, tool.name, True)
            self.skeletons.get(skeleton(tool.original_name), set()).discard(old)
            self._index(new.name, new.original_name)
        if new.pk is not None and new.name not in self.changed_names:
            self.changed_names.append(new.name)
        self._change(new, ChangeAction.UPDATE, before)
        return ImportOutcome.UPDATED

    def _provider_name(self, spec: ToolSpec, tool: Tool | None) -> str:
        """What ``tools._provider_name`` answers, from the in-memory view."""
        name = spec.name
        if spec.provider_name:
            if self.owners.get(spec.provider_name, name) != name:
                raise ToolConflict(
                    "provider_name",
                    f"provider_name: {spec.provider_name!r} is already used here",
                )
            if tool is None or spec.provider_name != tool.provider_name:
                self._refuse_lookalike_provider_name(spec.provider_name, name)
            return spec.provider_name
        if tool is not None and tool.provider_name and tool.name == spec.name:
            return tool.provider_name
        base = provider_safe_name(name)
        if self.owners.get(base, name) == name:
            return base  # free: what assign_provider_names gives, without the scan
        self._load_prefix(base[:COLLISION_PREFIX_LENGTH])
        taken = {held for held, owner in self.owners.items() if owner != name}
        return assign_provider_names([name], taken)[name]

    def _refuse_lookalike_provider_name(self, provider_name: str, name: str) -> None:
        """What ``tools._provider_name`` refuses: a given provider name confusable
        with one another tool holds (as the chunk has left them so far)."""
        if self.provider_owners is None:
            if self.locking:
                lock_catalog(self.catalog.pk)
            rows = Tool.objects.filter(catalog=self.catalog).order_by()
            stored = rows.values_list("provider_name", "name")
            self.provider_owners = {p: n for p, n in stored if n not in self.tools}
            self.provider_owners.update(
                (tool.provider_name, held) for held, tool in self.tools.items()
            )
        held = [p for p, owner in self.provider_owners.items() if owner != name]
        clash = confusable_names(provider_name, held)
        if clash:
            message = confusable_message(provider_name, clash, "provider_name")
            raise ValidationError({"provider_name": [message]})

    def _load_prefix(self, prefix: str) -> None:
        """Every stored provider name a derived name could collide with (rare: only
        when the plain derived name is taken); tools of the chunk keep theirs."""
        if prefix in self.loaded_prefixes:
            return
        self.loaded_prefixes.add(prefix)
        rows = (
            Tool.objects.filter(catalog=self.catalog, provider_name__startswith=prefix)
            .order_by()
            .values_list("provider_name", "name")
        )
        for held, owner in rows:
            if owner not in self.tools:
                self.owners[held] = owner

    def _keep(self, tool: Tool, old_provider_name: str) -> None:
        if self.owners.get(old_provider_name) == tool.name:
            del self.owners[old_provider_name]
        self.owners[tool.provider_name] = tool.name
        if self.provider_owners is not None:
            if self.provider_owners.get(old_provider_name) == tool.name:
                del self.provider_owners[old_provider_name]
            self.provider_owners[tool.provider_name] = tool.name
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
        record_events(
            [
                {
                    "event_type": EventType.TOOL_CHANGED,
                    "catalog_slug": self.catalog.slug,
                    "catalog_version": version,
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
            actor=self.actor,
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
            jobs.enqueue_embedding(tool_id)
