"""One name, one tool: the names a tool holds in its catalog, the refusal of a
name another tool holds, and the one tool a called name means.

A tool holds three names (``name``, ``provider_name``, ``original_name``), each held
by its look (``catalog.naming.look``, the UTS #39 skeleton) in a ``ToolName`` row
unique in the catalog: so every path that writes a tool refuses a name another tool
holds or looks like (``refuse``; of two writers at once the database refuses the
second, ``hold``), a called name resolves with one indexed lookup (``called_tool``),
and a look several tools held before the rule is refused as ambiguous until all
but one are renamed (``Ambiguous``, ``settle``).
The rules: docs/explanation/security.md, Tool names (One name, one tool).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q

from catalog.models import Catalog, Tool, ToolName
from catalog.naming import (
    MAX_NAME_LENGTH,
    first_free_tool_name,
    holders_by_look,
    look,
    looks_of,
    provider_safe_name,
)
from catalog.querysets import HELD, tool_visible
from config.exceptions import Conflict

FIELDS = ("name", "provider_name", "original_name")
CALLED = ("name", "provider_name")
_WORDS = {
    "name": "name",
    "provider_name": "provider name",
    "original_name": "original name",
}
TAKEN = (
    "name: another tool of this catalog took a name that looks like one of this "
    "tool's meanwhile; nothing was written, try again"
)


class ToolConflict(Conflict):
    """A tool with this name (or provider name) already exists in the catalog."""


class Ambiguous(Conflict):
    """A called name several tools held before the one-name rule (a 409)."""

    def __init__(self, name: str, slug: str) -> None:
        super().__init__(
            "name",
            f"name: {name!r} names more than one tool of catalog {slug!r} (names "
            "stored before the one-name rule); nothing was called: a curator "
            "must rename all but one",
        )


def names_of(source: Any) -> dict[str, str]:
    """Field -> text of each of the three names of ``source`` (a Tool or a
    ToolSpec), "" for one it has not."""
    return {field: getattr(source, field) for field in FIELDS}


def texts(source: Any) -> dict[str, str]:
    """Field -> text of the names ``source`` (a Tool or a ToolSpec) holds."""
    return {field: text for field, text in names_of(source).items() if text}


@dataclass(frozen=True)
class Holder:
    """The tool holding a look: its names (none: several tools held it before
    the rule, ``contested``)."""

    names: dict[str, str]
    contested: bool = False


def _holders(
    catalog_id: int, looks: Iterable[str], exclude: int | None
) -> dict[str, Holder]:
    rows = ToolName.objects.filter(catalog_id=catalog_id, look__in=set(looks))
    if exclude is not None:
        rows = rows.exclude(tool_id=exclude)
    fields = [f"tool__{field}" for field in FIELDS]
    found = rows.order_by().values_list("look", "tool_id", *fields)
    return {
        mark: Holder(dict(zip(FIELDS, names, strict=True)), tool_id is None)
        for mark, tool_id, *names in found
    }


def refuse(
    catalog_id: int,
    wanted: dict[str, str],
    errors: dict[str, list[str]],
    *,
    exclude: int | None = None,
) -> None:
    """Raise ValidationError with ``errors`` and a refusal of each of ``wanted``
    (field -> text) that another tool of the catalog holds, as it is or by its
    look; a ToolConflict (409) when the only refusal is a name or provider name
    another tool is called by exactly. Nothing is raised when nothing is wrong.
    Writers call it holding the catalog's lock (``lock_catalog``)."""
    holders = _holders(catalog_id, looks_of(*wanted.values()), exclude)
    judge(wanted, holders, errors)


def judge(
    wanted: dict[str, str], holders: dict[str, Holder], errors: dict[str, list[str]]
) -> None:
    """``refuse`` with the other tools' holders already read (look -> Holder;
    an import's chunk keeps its own)."""
    errors = {**errors}
    conflicts: list[ToolConflict] = []
    for field, text in wanted.items():
        holder = holders.get(look(text))
        if holder is None:
            continue
        taken = _conflict(field, text, holder)
        if taken is not None:
            conflicts.append(taken)
        else:
            message = _lookalike(field, text, holder)
            errors[field] = [*errors.get(field, []), message]
    if errors:
        for taken in conflicts:  # said too, once the rest is refused anyway
            errors[taken.field] = [*errors.get(taken.field, []), str(taken)]
        raise ValidationError(errors)
    if conflicts:
        raise conflicts[0]


def _conflict(field: str, text: str, holder: Holder) -> ToolConflict | None:
    """The 409 for a called name another tool is called by exactly, else None."""
    if field not in CALLED or holder.contested:
        return None
    owner = holder.names["name"]
    if field == "name" and owner == text:
        return ToolConflict("name", f"name: a tool named {text!r} already exists")
    if field == "provider_name" and holder.names["provider_name"] == text:
        return ToolConflict(
            "provider_name",
            f"provider_name: {text!r} is already used here, by tool {owner!r}",
        )
    for other in CALLED:
        if holder.names[other] == text:
            return ToolConflict(
                field,
                f"{field}: {text!r} is the {_WORDS[other]} of tool {owner!r} in "
                "this catalog: one name means one tool",
            )
    return None


def _lookalike(field: str, text: str, holder: Holder) -> str:
    """The refusal naming what looks like ``text`` (escaped, so the difference
    is visible), and whose provider or original name it is."""
    if holder.contested:
        return (
            f"{field}: {ascii(text)} looks like names several tools of this "
            "catalog held before the one-name rule; rename those first"
        )
    mark, owner, shown = look(text), holder.names["name"], {}
    for other, held in holder.names.items():
        if held and look(held) == mark and held not in shown:
            suffix = "" if other == "name" else f" ({_WORDS[other]} of {ascii(owner)})"
            shown[held] = f"{ascii(held)}{suffix}"
    return (
        f"{field}: {ascii(text)} is confusable with {', '.join(shown.values())} in "
        "this catalog (same Unicode confusable skeleton, UTS #39); choose a name "
        "that looks different"
    )


def is_free(catalog_id: int, text: str, *, exclude: int | None = None) -> bool:
    """Whether no tool of the catalog but ``exclude`` holds ``text``'s look."""
    rows = ToolName.objects.filter(catalog_id=catalog_id, look=look(text))
    if exclude is not None:
        rows = rows.exclude(tool_id=exclude)
    return not rows.exists()


def free_provider_name(
    catalog_id: int, name: str, *, exclude: int | None = None
) -> str:
    """``provider_safe_name(name)``, else the first ``_2``, ``_3``... that no
    other tool holds, as it is or by its look."""

    def free(candidate: str) -> bool:
        return is_free(catalog_id, candidate, exclude=exclude)

    return first_free_tool_name(provider_safe_name(name), free, MAX_NAME_LENGTH)


def hold(tool: Tool, before: dict[str, str] | None = None) -> None:
    """Write the looks ``tool`` (saved) holds: rows for the ones it gained, none
    for those it gave up (``before``: its names before this write, None for a
    new tool), a look it gave up that several held settled. A look another
    tool took meanwhile is a ToolConflict (the unique constraint): the caller's
    transaction is then rolled back whole."""
    try:
        with transaction.atomic():
            hold_many(tool.catalog_id, [(tool, before)])
    except IntegrityError as exc:
        raise ToolConflict("name", TAKEN) from exc


def hold_many(
    catalog_id: int, changed: list[tuple[Tool, dict[str, str] | None]]
) -> None:
    """``hold`` for tools of one catalog (an import's chunk at once): the looks
    given up are dropped first, then the gained ones written in one statement.
    An IntegrityError (another writer won, or names swapped inside a chunk, which
    the import then runs again one by one) is the caller's to handle."""
    dropped = Q(pk__in=[])
    gained: list[ToolName] = []
    released: set[str] = set()
    for tool, before in changed:
        now = looks_of(*texts(tool).values())
        had = looks_of(*before.values()) if before is not None else set()
        if before is not None and had == now:
            continue
        if had - now:
            dropped |= Q(tool=tool, look__in=had - now)
            released |= had - now
        gained += [
            ToolName(look=mark, catalog_id=catalog_id, tool=tool)
            for mark in sorted(now - had)
        ]
    if released:
        ToolName.objects.filter(dropped).delete()
    ToolName.objects.bulk_create(gained)
    settle(catalog_id, released)


def settle(catalog_id: int, released: set[str]) -> None:
    """Looks given up that several tools held before the rule: held by the one
    tool still holding them, or by none (gone)."""
    if not released:
        return
    contested = ToolName.objects.filter(
        catalog_id=catalog_id, look__in=released, tool=None
    )
    marks = set(contested.values_list("look", flat=True))
    if not marks:
        return
    held = holders_by_look(_stored(catalog_id))
    for mark in marks:
        rows = contested.filter(look=mark)
        if mark not in held:
            rows.delete()
        elif held[mark] is not None:
            rows.update(tool_id=held[mark])


def _stored(catalog_id: int) -> Iterable[tuple[int, str, str, str]]:
    rows = Tool.objects.filter(catalog_id=catalog_id).order_by()
    return rows.values_list("pk", *FIELDS).iterator(chunk_size=5000)


def reclaim(catalog_id: int) -> None:
    """Every look of the catalog again from its tools as stored (what the
    migration did): for names written past the services (tests, benches)."""
    held = holders_by_look(_stored(catalog_id))
    with transaction.atomic():
        ToolName.objects.filter(catalog_id=catalog_id).delete()
        ToolName.objects.bulk_create(
            [
                ToolName(look=mark, catalog_id=catalog_id, tool_id=tool_id)
                for mark, tool_id in held.items()
            ],
            batch_size=5000,
        )


def called_tool(catalog: Catalog, name: str, access: Any) -> Tool | None:
    """The tool ``name`` calls in ``catalog``, if the caller may see it (else
    None, as for a name no tool holds); Ambiguous when several held its look."""
    row = (
        ToolName.objects.filter(catalog=catalog, look=look(name))
        .select_related("tool")
        .first()
    )
    if row is None:
        return None
    tool = row.tool
    if tool is None:
        if ambiguous(catalog, [name], access):
            raise Ambiguous(name, catalog.slug)
        return None
    Tool._meta.get_field("catalog").set_cached_value(tool, catalog)  # type: ignore[union-attr]
    if name not in (tool.name, tool.provider_name) or not tool_visible(access, tool):
        return None
    return None if tool.status == HELD else tool


def called_tools(
    catalog: Catalog, names: list[str], access: Any, related: tuple[str, ...] = ()
) -> dict[str, Tool]:
    """Called name -> the tool it calls in ``catalog`` that the caller may see
    (``called_tool`` for many names, in one query; ``related``: relations to
    fetch with it). A name several held is left out: see ``ambiguous``."""
    if not names:
        return {}
    rows = (
        Tool.objects.visible_to(access)
        .filter(catalog=catalog)
        .exclude(status=HELD)
        .called(names)
        .select_related(*related)
    )
    found: dict[str, Tool] = {}
    for tool in rows:
        for text in {tool.name, tool.provider_name} & set(names):
            found[text] = tool
    return found


def ambiguous(catalog: Catalog, names: list[str], access: Any) -> set[str]:
    """Those of ``names`` whose look several tools held before the rule and
    that name a tool the caller can see exactly (to others they are unknown)."""
    if not names:
        return set()
    marks: dict[str, set[str]] = {}
    for name in names:
        marks.setdefault(look(name), set()).add(name)
    contested = ToolName.objects.filter(catalog=catalog, look__in=marks, tool=None)
    held = {n for mark in contested.values_list("look", flat=True) for n in marks[mark]}
    if not held:
        return set()
    rows = Tool.objects.visible_to(access).filter(catalog=catalog)
    rows = rows.filter(Q(name__in=held) | Q(provider_name__in=held))
    seen = rows.values_list("name", "provider_name")
    return {text for pair in seen for text in pair if text in held}
