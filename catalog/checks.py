"""System checks over stored data, run by ``migrate`` (tag ``database``).

Tool names stored before the name rules (``catalog.naming``) are reported, never
renamed: a rename would change what agents and saved selections refer to, so it is
the curator's call. ``manage.py check --database default`` runs them on demand.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.core.checks import CheckMessage, Tags, Warning, register
from django.db import DatabaseError

from catalog.naming import hidden_characters, name_problems, skeleton

SHOWN = 5


@register(Tags.database)
def check_stored_tool_names(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """W001: names outside the character rule; W002: confusable names in one
    catalog; W003: names several tools hold. Nothing when the tables do not
    exist yet."""
    if not databases:
        return []
    from catalog.models import Tool

    rows = Tool.objects.order_by("catalog__slug", "name").values_list(
        "catalog__slug", "name"
    )
    try:
        names = list(rows)
        shared = _shared_looks()
    except DatabaseError:
        return []
    return [*_breaking_the_rule(names), *_confusable(names), *shared]


def _shared_looks() -> list[CheckMessage]:
    """W003: names (or provider or original names) several tools held before
    the one-name rule (``catalog.names``): a call by one is refused."""
    from catalog.models import ToolName

    rows = ToolName.objects.filter(tool=None).values_list("catalog__slug", flat=True)
    slugs = sorted(set(rows))
    if not slugs:
        return []
    count = ToolName.objects.filter(tool=None).count()
    return [
        Warning(
            f"{count} name(s) are held by more than one tool (a tool's name, "
            "provider name or original name equal to or looking like another "
            f"tool's) in catalog(s): {', '.join(slugs[:SHOWN])}; a call by such a "
            "name is refused as ambiguous",
            hint="Rename all but one tool of each. "
            "docs/explanation/security.md, Tool names.",
            id="catalog.W003",
        )
    ]


def _breaking_the_rule(names: list[tuple[str, str]]) -> list[CheckMessage]:
    bad = [(s, n) for s, n in names if name_problems(n) or hidden_characters(n)]
    if not bad:
        return []
    shown = ", ".join(f"{slug}/{ascii(name)}" for slug, name in bad[:SHOWN])
    return [
        Warning(
            f"{len(bad)} stored tool name(s) break the tool name rules: {shown}",
            hint="They still work and stay editable; rename them (a rename must "
            "keep the rules). docs/explanation/security.md, Tool names.",
            id="catalog.W001",
        )
    ]


def _confusable(names: list[tuple[str, str]]) -> list[CheckMessage]:
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for slug, name in names:
        groups[(slug, skeleton(name))].append(name)
    clashes = [(s, g) for (s, _k), g in groups.items() if len(g) > 1]
    if not clashes:
        return []
    shown = "; ".join(
        f"{slug}: {' / '.join(ascii(n) for n in group)}"
        for slug, group in clashes[:SHOWN]
    )
    return [
        Warning(
            f"{len(clashes)} group(s) of confusable tool names in one catalog: {shown}",
            hint="Rename all but one of each group. "
            "docs/explanation/security.md, Tool names.",
            id="catalog.W002",
        )
    ]
