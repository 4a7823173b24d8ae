"""What a change event says, read for people: its before and after, field by field
(nested values such as a JSON Schema as one line per path), in plain words.

Plain functions over the stored JSON (no queries), so rows written by older code
still read."""

from __future__ import annotations

import json
from typing import Any

from audit.choices import EventType
from audit.models import AuditEvent

# Events that record a change (everything but selections and tool-call checks).
CHANGE_TYPES = tuple(
    t for t in EventType.values if t not in (EventType.SELECTION, EventType.VALIDATION)
)
_MISSING = object()
# Nested changes listed per value before the list says "and N more".
MAX_PATHS = 200

LABELS = {
    "allowed_roles": "Roles allowed",
    "allow_no_schema": "May have no schema",
    "allow_unsafe": "May use unsafe tools",
    "annotations": "Annotations",
    "avoid_when": "Avoid when",
    "capabilities": "Capabilities",
    "catalogs": "Catalogs",
    "cost_per_call": "Cost per call",
    "default_scorer": "Default scorer",
    "expires": "Expires",
    "groups": "Groups",
    "is_active": "Active",
    "is_superuser": "Superuser",
    "key_prefix": "Key starts with",
    "no_schema_mode": "No-schema mode",
    "parameters": "Parameters (JSON Schema)",
    "provider_name": "Provider name",
    "rate_limit_per_minute": "Requests per minute",
    "requires_approval": "Needs approval",
    "risk_level": "Risk level",
    "safe": "Safe",
    "scope": "Scope",
    "strict": "Strict",
}


def label(field: str) -> str:
    """A field's name in plain words."""
    return LABELS.get(field) or field.replace("_", " ").capitalize()


def before_after(event: AuditEvent) -> tuple[Any, Any]:
    """The recorded state before and after a change. Writers put ``before`` in the
    input and ``after`` in the input (settings) or the output (tools, keys,
    access); a creation without either records what it made as its input."""
    data, output = event.input or {}, event.output or {}
    if "before" not in data and "after" not in data and "after" not in output:
        return None, data
    after = data["after"] if "after" in data else output.get("after")
    return data.get("before"), after


def show(value: Any) -> str:
    """A value as one short text: strings bare, the rest as JSON, absent as —."""
    if value is _MISSING or value is None:
        return "—"
    if isinstance(value, str):
        return value or "(empty)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def field_changes(before: Any, after: Any) -> list[dict[str, Any]]:
    """One row per top-level field that differs: its label, old and new values,
    and for objects and lists the changed paths inside (a schema's properties)."""
    old_fields = before if isinstance(before, dict) else {}
    new_fields = after if isinstance(after, dict) else {}
    # jsonb keeps no key order: alphabetical reads the same every time.
    keys = sorted(set(new_fields) | set(old_fields))
    rows = []
    for key in keys:
        old, new = old_fields.get(key, _MISSING), new_fields.get(key, _MISSING)
        if old == new:
            continue
        nested = isinstance(old, dict | list) or isinstance(new, dict | list)
        rows.append(
            {
                "field": key,
                "label": label(key),
                "old": show(old),
                "new": show(new),
                "nested": nested,
                "paths": path_changes(old, new) if nested else [],
            }
        )
    return rows


def path_changes(old: Any, new: Any, path: tuple[str, ...] = ()) -> list[str]:
    """Readable lines for what changed inside two JSON values, e.g.
    ``properties › amount › type: "string" → "number"`` or
    ``required: added "currency"``."""
    lines: list[str] = []
    _walk(old, new, path, lines)
    if len(lines) > MAX_PATHS:
        lines = [*lines[:MAX_PATHS], f"… and {len(lines) - MAX_PATHS} more"]
    return lines


def _walk(old: Any, new: Any, path: tuple[str, ...], out: list[str]) -> None:
    where = " › ".join(path) or "(whole value)"
    if old == new:
        return
    if old is _MISSING or old is None and new is not None:
        out.append(f"{where}: added {_compact(new)}")
    elif new is _MISSING or new is None:
        out.append(f"{where}: removed (was {_compact(old)})")
    elif isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(new) | set(old)):
            _walk(old.get(key, _MISSING), new.get(key, _MISSING), (*path, key), out)
    elif _scalar_list(old) and _scalar_list(new):
        _list_members(old, new, where, out)
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            _walk(_at(old, i), _at(new, i), (*path, f"[{i}]"), out)
    else:
        out.append(f"{where}: {_compact(old)} → {_compact(new)}")


def _list_members(old: list[Any], new: list[Any], where: str, out: list[str]) -> None:
    added = [v for v in new if v not in old]
    removed = [v for v in old if v not in new]
    if added:
        out.append(f"{where}: added {', '.join(_compact(v) for v in added)}")
    if removed:
        out.append(f"{where}: removed {', '.join(_compact(v) for v in removed)}")
    if not added and not removed:
        out.append(f"{where}: reordered {_compact(old)} → {_compact(new)}")


def _scalar_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        not isinstance(v, dict | list) for v in value
    )


def _at(items: list[Any], index: int) -> Any:
    return items[index] if index < len(items) else _MISSING


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:119] + "…"
