"""What makes a changed definition risky: an input schema that accepts more than
the pinned one did, or hints that now say the tool does more than they said.

``widenings`` fails closed: a change it cannot prove narrower (a changed
``anyOf``, ``$ref``, ``pattern``...) counts as widening. Texts (descriptions,
titles, examples) never do; they are screened for what they say instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Lower bounds: a smaller value (or none) accepts more.
LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
# Upper bounds: a larger value (or none) accepts more.
UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
# Keywords whose change Quiver does not try to order: any change but adding one
# counts as widening.
OPAQUE = (
    "pattern",
    "format",
    "multipleOf",
    "const",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$defs",
    "definitions",
    "anyOf",
    "oneOf",
    "allOf",
    "prefixItems",
    "patternProperties",
    "propertyNames",
    "contains",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
MAX_DEPTH = 32


def widenings(old: Any, new: Any, path: str = "") -> list[str]:
    """Where ``new`` may accept arguments ``old`` refused, as ``path: why``."""
    if old == new:
        return []
    where = path or "/"
    if len(path.split("/")) > MAX_DEPTH:
        return [f"{where}: nested too deep to compare"]
    if new is None:
        return [f"{where}: the schema was removed (any arguments accepted)"]
    if old is None:
        return []
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return [f"{where}: changed"]
    found: list[str] = []
    _types(old, new, where, found)
    _required(old, new, where, found)
    _properties(old, new, path, found)
    _additional(old, new, path, found)
    _enum(old, new, where, found)
    _bounds(old, new, where, found)
    if "items" in old:
        found.extend(widenings(old["items"], new.get("items"), f"{path}/items"))
    for key in OPAQUE:
        if key in old and old.get(key) != new.get(key):
            found.append(f"{where}: {key} changed")
    if old.get("uniqueItems") is True and new.get("uniqueItems") is not True:
        found.append(f"{where}: uniqueItems dropped")
    return found


def _types(old: Mapping, new: Mapping, where: str, found: list[str]) -> None:
    if "type" not in old:
        return
    before, after = _type_set(old.get("type")), _type_set(new.get("type"))
    if before is None:
        return
    if after is None or not after <= before:
        added = "any type" if after is None else ", ".join(sorted(after - before))
        found.append(f"{where}: type widened ({added})")


def _type_set(value: Any) -> set[str] | None:
    if value is None:
        return None
    kinds = set(value) if isinstance(value, list) else {value}
    if "number" in kinds:
        kinds.add("integer")
    return {str(kind) for kind in kinds}


def _required(old: Mapping, new: Mapping, where: str, found: list[str]) -> None:
    before = set(old.get("required") or [])
    dropped = before - set(new.get("required") or [])
    if dropped:
        found.append(f"{where}: no longer required: {', '.join(sorted(dropped))}")


def _closed(schema: Mapping) -> bool:
    return schema.get("additionalProperties") is False


def _properties(old: Mapping, new: Mapping, path: str, found: list[str]) -> None:
    before = old.get("properties") or {}
    after = new.get("properties") or {}
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        if before != after:
            found.append(f"{path or '/'}: properties changed")
        return
    for key in sorted(set(before) | set(after)):
        here = f"{path}/properties/{key}"
        if key in before and key in after:
            found.extend(widenings(before[key], after[key], here))
        elif key in after and _closed(old):
            found.append(f"{here}: added (the object accepted no such property)")
        elif key in before and not _closed(new):
            found.append(f"{here}: removed (now accepts any value)")


def _additional(old: Mapping, new: Mapping, path: str, found: list[str]) -> None:
    if "additionalProperties" not in old:
        return
    before, after = old["additionalProperties"], new.get("additionalProperties", True)
    if before is False and after is not False:
        found.append(f"{path or '/'}: additionalProperties no longer false")
    elif isinstance(before, Mapping):
        if isinstance(after, Mapping):
            found.extend(widenings(before, after, f"{path}/additionalProperties"))
        elif after is not False:
            found.append(f"{path or '/'}: additionalProperties widened")


def _enum(old: Mapping, new: Mapping, where: str, found: list[str]) -> None:
    if "enum" not in old:
        return
    before, after = old.get("enum") or [], new.get("enum")
    if after is None:
        found.append(f"{where}: enum removed")
    elif any(value not in before for value in after):
        found.append(f"{where}: enum values added")


def _bounds(old: Mapping, new: Mapping, where: str, found: list[str]) -> None:
    for key in (*LOWER, *UPPER):
        if key not in old:
            continue
        before, after = old[key], new.get(key)
        lower = key in LOWER
        if after is None:
            found.append(f"{where}: {key} removed")
        elif _numbers(before, after) and (after < before if lower else after > before):
            found.append(f"{where}: {key} {before} -> {after}")
        elif not _numbers(before, after) and before != after:
            found.append(f"{where}: {key} changed")


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


# MCP's hint defaults: not read-only, destructive, not idempotent, open world.
def effective(hints: Mapping[str, Any]) -> dict[str, bool]:
    read_only = hints.get("readOnlyHint") is True
    read_only = read_only and hints.get("destructiveHint") is not True
    return {
        "readOnlyHint": read_only,
        "destructiveHint": not read_only and hints.get("destructiveHint") is not False,
        "idempotentHint": hints.get("idempotentHint") is True,
        "openWorldHint": hints.get("openWorldHint") is not False,
    }


# The value of each hint that says a tool does less (is safer to offer or retry).
_SAFER = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


def riskier_hints(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Each hint that said the tool was safer and no longer does (readOnlyHint
    dropped, destructiveHint now true...)."""
    before, after = effective(old), effective(new)
    found = []
    for key, safer in _SAFER.items():
        if before[key] == safer and after[key] != safer:
            change = "dropped" if safer else "now true"
            found.append(f"annotations: {key} {change}")
    return found
