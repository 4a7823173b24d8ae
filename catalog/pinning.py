"""Pinned definitions: what of a tool a model reads (its definition), the hash
the audit chain records of it, a side-by-side diff of two and what makes a
change risky (``screening.changes``).

A tool's definition is its name, title, description, input schema (the stored
``parameters``), output schema and annotations (the stored ``annotations``
without ``outputSchema``): what every agent path shows and what calls are
validated against. Plain functions, no queries.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from catalog.spec import ToolSpec
from screening.changes import effective, riskier_hints, widenings

MAX_DIFF_ROWS = 400


def definition_of(spec: ToolSpec) -> dict[str, Any]:
    """The spec's definition (the stored values, not copied: only read)."""
    annotations = spec.annotations if isinstance(spec.annotations, dict) else {}
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": spec.parameters,
        "outputSchema": annotations.get("outputSchema"),
        "annotations": {k: v for k, v in annotations.items() if k != "outputSchema"},
    }


def definition_of_tool(tool: Any) -> dict[str, Any]:
    """``definition_of`` a stored tool, read from its columns."""
    annotations = tool.annotations if isinstance(tool.annotations, dict) else {}
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.parameters,
        "outputSchema": annotations.get("outputSchema"),
        "annotations": {k: v for k, v in annotations.items() if k != "outputSchema"},
    }


def comparable(definition: dict[str, Any]) -> dict[str, Any]:
    """The definition with its four MCP hints as what they mean (the spec's
    defaults filled in): hints written out with the values they already had
    change nothing an agent is told."""
    annotations = dict(definition.get("annotations") or {})
    annotations.update(effective(annotations))
    return {**definition, "annotations": annotations}


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def definition_hash(definition: dict[str, Any]) -> str:
    """The SHA-256 of the definition's canonical JSON: what selection and call
    audit rows record, so the chain shows which definition each one used."""
    return hashlib.sha256(canonical(definition).encode()).hexdigest()


def tool_definition_hash(tool: Any) -> str:
    return definition_hash(definition_of_tool(tool))


def diff_hash(served: dict[str, Any] | None, proposed: dict[str, Any]) -> str:
    """The hash of the change itself (both sides): what a decision records."""
    pair = canonical({"served": served, "proposed": proposed})
    return hashlib.sha256(pair.encode()).hexdigest()


def change_risks(served: dict[str, Any], proposed: dict[str, Any]) -> list[str]:
    """Why serving ``proposed`` in place of ``served`` is risky: the input
    schema accepts more, or a hint now says the tool does more."""
    risks = [
        f"inputSchema{where}" if where.startswith("/") else f"inputSchema {where}"
        for where in widenings(served.get("inputSchema"), proposed.get("inputSchema"))
    ]
    return risks + riskier_hints(
        served.get("annotations") or {}, proposed.get("annotations") or {}
    )


def diff_rows(
    served: dict[str, Any] | None, proposed: dict[str, Any]
) -> list[dict[str, Any]]:
    """Side by side: one row per leaf path of either definition (a schema's
    nested values as JSON pointers), its text before and after and whether it
    changed; changed rows and their parents are what a reviewer reads."""
    before = _leaves(served or {}, "")
    after = _leaves(proposed, "")
    rows = []
    for path in sorted(set(before) | set(after), key=_order):
        old, new = before.get(path), after.get(path)
        rows.append(
            {
                "path": path,
                "before": old,
                "after": new,
                "changed": old != new,
            }
        )
    return rows[:MAX_DIFF_ROWS]


def _order(path: str) -> tuple[int, str]:
    keys = ("name", "title", "description", "inputSchema", "outputSchema")
    top = path.split("/", 1)[0]
    return (keys.index(top) if top in keys else len(keys), path)


def _leaves(value: Any, path: str) -> dict[str, str]:
    """Each scalar of ``value`` by its path, as text (strings bare, the rest
    JSON); an empty object or list is a leaf of its own."""
    if isinstance(value, dict) and value:
        found: dict[str, str] = {}
        for key, item in value.items():
            found.update(_leaves(item, f"{path}/{key}" if path else str(key)))
        return found
    if isinstance(value, list) and value:
        found = {}
        for index, item in enumerate(value):
            found.update(_leaves(item, f"{path}/{index}"))
        return found
    if path in ("", None):
        return {}
    return {path: value if isinstance(value, str) else canonical(value)}
