"""An upstream MCP tool as a catalog tool: its name, its spec, and what a sync owns.

A sync needs one deterministic answer to "which catalog tool is this upstream tool,
and which of its fields may the upstream change": names are
``<source>__<upstream name>`` (a safe name when that breaks the tool-name rule), the
MCP hints set a new tool's flags and may tighten but never, by a re-sync alone,
loosen an existing one. The rules: docs/how-to/sources.md, What a sync does.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from catalog.models import Tool
from catalog.naming import needs_new_name, provider_safe_name, safe_tool_name
from catalog.services.import_names import SafeNames
from catalog.services.tools import tool_to_spec
from catalog.spec import ToolSpec
from config.jsonparse import BAD_TEXT_RULE, find_bad_text

SEPARATOR = "__"
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
SYNC_ANNOTATIONS = (*HINTS, "outputSchema")
OPEN_WORLD_TAG = "open-world"
SCALAR_FLAGS = ("safe", "requires_approval", "risk_level")
MEMBER_FLAGS = ("tags", "capabilities")


def tool_name(source_name: str, upstream_name: str) -> str:
    return f"{source_name}{SEPARATOR}{upstream_name}"


def new_tool_names(
    source_name: str, catalog_id: int, upstream_names: list[str]
) -> dict[str, tuple[str, str]]:
    """Upstream name -> (catalog name, note) for the new tools whose plain name
    breaks the rule; the names the others take as they are come first."""
    plain = {up: tool_name(source_name, up) for up in upstream_names}
    wanting = [up for up, name in plain.items() if needs_new_name(name)]
    if not wanting:
        return {}
    kept = [name for up, name in plain.items() if up not in wanting]
    names = SafeNames(catalog_id, kept)
    chosen = {}
    for up in wanting:
        base = safe_tool_name(tool_name(source_name, safe_tool_name(up)))
        chosen[up] = names.choose(plain[up], base)
    return chosen


# An upstream name is kept whole (calls reach the upstream by it), so it must
# fit its column; MCP's tool-name format allows 128 characters.
MAX_UPSTREAM_NAME_CHARS = 200


def unstorable(upstream: dict[str, Any]) -> str:
    """Why this listed tool cannot be stored as it is, or "": a name longer
    than ``MAX_UPSTREAM_NAME_CHARS``, or a NUL or a lone surrogate anywhere (no
    database text holds them). Such an item is rejected; nothing is written."""
    name = str(upstream.get("name"))
    if len(name) > MAX_UPSTREAM_NAME_CHARS:
        return (
            f"name: an upstream tool name may have at most "
            f"{MAX_UPSTREAM_NAME_CHARS} characters (MCP's format allows 128); "
            f"this one has {len(name)}"
        )
    where = find_bad_text(upstream)
    if where is not None:
        return f"{where}: {BAD_TEXT_RULE}"
    return ""


def unsupported(upstream: dict[str, Any]) -> str:
    """Why Quiver cannot run this upstream tool, or "": one whose
    ``execution.taskSupport`` is "required" runs only as an MCP task (the
    caller polls ``tasks/get``), and Quiver calls tools directly."""
    execution = upstream.get("execution")
    if isinstance(execution, dict) and execution.get("taskSupport") == "required":
        return (
            "execution.taskSupport: 'required': the tool runs only as an MCP "
            "task, which Quiver does not support (it calls tools directly)"
        )
    return ""


def upstream_hash(upstream: dict[str, Any]) -> str:
    encoded = json.dumps(upstream, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


def hints(upstream: dict[str, Any]) -> dict[str, Any]:
    annotations = upstream.get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def effective(given: dict[str, Any]) -> dict[str, bool]:
    """What hint annotations mean, MCP's defaults filled in; a destructive claim
    outweighs a read-only one (fail closed on a self-contradiction)."""
    read_only = given.get("readOnlyHint") is True
    read_only = read_only and given.get("destructiveHint") is not True
    return {
        "readOnlyHint": read_only,
        "destructiveHint": not read_only and given.get("destructiveHint") is not False,
        "idempotentHint": given.get("idempotentHint") is True,
        "openWorldHint": given.get("openWorldHint") is not False,
    }


# The value of each hint that offers or runs a tool more freely.
LOOSE = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


def admitted(
    given: dict[str, Any], current: dict[str, Any] | None, held: list[str]
) -> dict[str, Any]:
    """The hint annotations a sync stores: ``given`` (the upstream's), except
    each that would loosen ``current`` (an existing tool's; None for a new one),
    which keeps its current meaning, written out and named in ``held``. Never
    read-only and destructive at once."""
    kept = {key: given[key] for key in HINTS if key in given}
    if current is not None:
        now, new = effective(current), effective(given)
        for key in HINTS:
            if new[key] == LOOSE[key] and now[key] != LOOSE[key]:
                kept[key] = now[key]
                held.append(key)
    if kept.get("destructiveHint") is True and kept.get("readOnlyHint") is True:
        kept["readOnlyHint"] = False
    return kept


def derived(upstream: dict[str, Any]) -> dict[str, Any]:
    """The flags the hints give (see the module's docstring)."""
    given = effective(hints(upstream))
    read_only, destructive = given["readOnlyHint"], given["destructiveHint"]
    capabilities = set()
    if read_only:
        capabilities.add("read-only")
    if given["idempotentHint"]:
        capabilities.add("idempotent")
    tags = {OPEN_WORLD_TAG} if given["openWorldHint"] else set()
    return {
        "safe": not destructive,
        "requires_approval": destructive,
        "risk_level": "low" if read_only else "high" if destructive else "medium",
        "tags": tags,
        "capabilities": capabilities,
    }


RISK_ORDER = ("low", "medium", "high", "critical")


def _looser(flag: str, new: Any, current: Any) -> bool:
    """Would ``new`` offer or run the tool more freely than ``current``?"""
    if flag == "safe":
        return bool(new) and not current
    if flag == "requires_approval":
        return bool(current) and not new
    if flag == "risk_level" and new in RISK_ORDER and current in RISK_ORDER:
        return RISK_ORDER.index(new) < RISK_ORDER.index(current)
    return False


def _title(upstream: dict[str, Any]) -> str:
    title = upstream.get("title") or hints(upstream).get("title") or ""
    return str(title)[:200]


def _annotations(current: dict[str, Any], upstream: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in current.items() if k not in SYNC_ANNOTATIONS}
    if "outputSchema" in upstream:
        kept["outputSchema"] = upstream["outputSchema"]
    return kept


def synced_spec(
    name: str,
    upstream: dict[str, Any],
    tool: Tool | None,
    previous: dict[str, Any] | None,
    held: list[str] | None = None,
    original_name: str = "",
) -> ToolSpec:
    """The spec a sync writes: ``tool`` (None: a new one, named ``name``, with
    ``original_name`` when that is a safe stand-in) with the upstream fields of
    ``upstream``, its hints as ``admitted`` and the flags they give that the
    curator has not changed since ``previous`` (the upstream JSON of the last
    sync). What the new hints would loosen on an existing tool is kept and named
    in ``held``."""
    held = held if held is not None else []
    spec = tool_to_spec(tool) if tool is not None else ToolSpec(name=name)
    if tool is None:
        spec.original_name = original_name
        spec.provider_name = provider_safe_name(name)
    spec.title = _title(upstream)
    description = upstream.get("description")
    spec.description = description if isinstance(description, str) else ""
    schema = upstream.get("inputSchema")
    spec.parameters = schema if isinstance(schema, dict) else None
    existing = tool is not None
    current = hints({"annotations": spec.annotations}) if existing else None
    given = admitted(hints(upstream), current, held)
    spec.annotations = {**_annotations(spec.annotations, upstream), **given}
    old = derived(previous) if existing and previous is not None else None
    if existing:
        # Only to name, for the curator, the flags the upstream's word would loosen.
        _Follow(derived(upstream), old, existing, held).apply(replace(spec))
    _Follow(derived({"annotations": given}), old, existing, held).apply(spec)
    held[:] = list(dict.fromkeys(held))
    return spec


@dataclass(frozen=True)
class _Follow:
    """The flags follow the hints ``new`` while the curator has not changed them
    since the last sync's (``old``; None: no last sync), never looser on an
    ``existing`` tool: what they would loosen is named in ``held``."""

    new: dict[str, Any]
    old: dict[str, Any] | None
    existing: bool
    held: list[str]

    def apply(self, spec: ToolSpec) -> None:
        self._scalar_flags(spec)
        self._member_flags(spec)

    def _scalar_flags(self, spec: ToolSpec) -> None:
        """Safe, requires_approval and risk level."""
        new, old = self.new, self.old
        for flag in SCALAR_FLAGS:
            if old is None or getattr(spec, flag) == old[flag]:
                if self.existing and _looser(flag, new[flag], getattr(spec, flag)):
                    self.held.append(flag)
                    continue
                setattr(spec, flag, new[flag])

    def _member_flags(self, spec: ToolSpec) -> None:
        """Each derived tag and capability; a capability (what requests may
        require: ``read-only``, ``idempotent``) is never added to an existing
        tool by a sync."""
        new, old = self.new, self.old
        for flag in MEMBER_FLAGS:
            values = list(getattr(spec, flag))
            for member in sorted(new[flag] | (old[flag] if old else set())):
                untouched = old is None or (member in values) == (member in old[flag])
                if not untouched:
                    continue
                if member in new[flag] and member not in values:
                    if self.existing and flag == "capabilities":
                        self.held.append(f"capability {member}")
                        continue
                    values.append(member)
                elif member not in new[flag] and member in values:
                    values.remove(member)
            setattr(spec, flag, values)
