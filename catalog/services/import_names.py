"""An import's names: the items that keep theirs, the ones given a safe name.

A name that breaks the rule for a new tool name is refused by default
(``names=refuse``), or with ``names=rename`` given a deterministic safe name, the
file's name kept as the tool's ``original_name``; either way an item whose name is
a tool's original name is that tool, so importing the same file again changes
nothing. Collisions are settled in document order against the catalog as it is,
never silently. The rules: docs/explanation/security.md, Tool names (Names from
real catalogs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from catalog.formats import ImportItem
from catalog.models import Catalog, Tool
from catalog.names import is_free
from catalog.naming import (
    first_free_tool_name,
    look,
    needs_new_name,
    safe_tool_name,
)

REFUSE, RENAME = "refuse", "rename"
NAME_CHOICES = (REFUSE, RENAME)
RENAME_HINT = "names=rename would import it under a safe name"


@dataclass
class NamePlan:
    """The items with their new names, and what the report says about each."""

    items: list[ImportItem]
    renamed: dict[int, str] = field(default_factory=dict)  # index -> file's name
    notes: dict[int, str] = field(default_factory=dict)
    hints: set[int] = field(default_factory=set)

    def annotate(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A job entry with the item's name from the file and why it changed."""
        index = entry["index"]
        if index in self.renamed:
            note = self.notes[index]
            reason = "; ".join(part for part in (note, entry["reason"]) if part)
            return {**entry, "reason": reason, "renamed_from": self.renamed[index]}
        if index in self.hints and entry["outcome"] == "rejected":
            return {**entry, "reason": f"{entry['reason']}; {RENAME_HINT}"}
        return entry


def check_names_option(names: Any) -> str:
    """The ``names`` option, or a ValueError naming it and its choices."""
    if names not in NAME_CHOICES:
        raise ValueError(f"names: must be one of {', '.join(NAME_CHOICES)}")
    return str(names)


def plan_names(catalog: Catalog, items: list[ImportItem], names: str) -> NamePlan:
    """Each item's name as the import will use it (see the module docstring)."""
    wanting = [i for i in items if i.spec is not None and needs_new_name(i.spec.name)]
    if not wanting:
        return NamePlan(items)
    asked = {i.spec.name for i in wanting if i.spec is not None}
    tools = Tool.objects.filter(catalog=catalog).order_by("id")
    stored = set(tools.filter(name__in=asked).values_list("name", flat=True))
    wanting = [i for i in wanting if i.spec is not None and i.spec.name not in stored]
    if not wanting:
        return NamePlan(items)
    known: dict[str, str] = {}  # an original name -> its tool (the oldest)
    rows = tools.filter(original_name__in=asked).values_list("original_name", "name")
    for original, name in rows:
        known.setdefault(original, name)
    names_in_use = SafeNames(catalog.pk, (i.spec.name for i in items if i.spec))
    plan = NamePlan(list(items))
    position = {item.index: at for at, item in enumerate(items)}
    for item in wanting:
        assert item.spec is not None
        original = item.spec.name
        if original in known:
            name, note = known[original], _known_note(original, known[original])
        elif names == RENAME:
            name, note = names_in_use.choose(original)
        else:
            plan.hints.add(item.index)
            continue
        known.setdefault(original, name)
        spec = replace(item.spec, name=name, original_name=original)
        plan.items[position[item.index]] = ImportItem(item.index, spec, None)
        plan.renamed[item.index] = original
        plan.notes[item.index] = note
    return plan


def _known_note(original: str, name: str) -> str:
    return f"{original!r} is the original name of tool {name!r}"


class SafeNames:
    """Safe names that are free: no name the file uses nor one that looks like
    one (a name's own original may look like it), and none a tool of the
    catalog holds (``catalog.names``). Imports and syncs (``sources.mapping``)
    choose with it."""

    def __init__(self, catalog_id: int, in_file: Iterable[str]) -> None:
        self.catalog_id = catalog_id
        self.taken: set[str] = set()
        self.holders: dict[str, set[str]] = {}
        for name in in_file:
            self._hold(name)

    def _hold(self, text: str) -> None:
        self.taken.add(text)
        self.holders.setdefault(look(text), set()).add(text)

    def choose(self, original: str, base: str = "") -> tuple[str, str]:
        """The safe name for ``original`` (``base``, else ``safe_tool_name`` of
        it, or the first free ``base_N``) and the report's note on it."""
        base = base or safe_tool_name(original)

        def free(candidate: str) -> bool:
            if candidate in self.taken:
                return False
            if not self.holders.get(look(candidate), set()) <= {original}:
                return False
            return is_free(self.catalog_id, candidate)

        name = first_free_tool_name(base, free)
        self._hold(name)
        note = f"{original!r} breaks the tool-name rule: named {name!r}"
        if name != base:
            note += f" ({base!r} is taken or looks like a name in use)"
        return name, note
