"""Validating a model's tool call against the canonical schema (seed 001), audited."""

from __future__ import annotations

import uuid
from dataclasses import asdict
from typing import Any

from django.http import Http404

from audit.actors import Actor
from catalog.models import Catalog, Tool
from catalog.names import called_tool
from catalog.schema_policy import validate_arguments
from catalog.services.tools import tool_to_spec
from identity.access import Access, access_for
from selection.engine.types import HIDDEN
from selection.services.tool_calls import (
    FLAGS,
    not_allowed_reason,
    record_validation,
    why_not_allowed,
)


def find_tool(catalog: Catalog, name: str, access: Access) -> Tool | None:
    """The one tool the caller may see that ``name`` calls (its name or the
    provider-safe name the model saw; ``catalog.names``); a tool the caller could
    never be offered is not found (no hint), and neither is one held for review,
    whoever asks (every agent path reads here). ``catalog.names.Ambiguous`` (a
    409) for a name several tools held before the one-name rule."""
    return called_tool(catalog, name, access)


def validate_tool_call(
    catalog: Catalog,
    tool: Tool,
    arguments: dict[str, Any] | str,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    access: Access | None = None,
) -> dict[str, Any]:
    """Parse -> validate with the tool version's compiled validator; one audit row.

    A tool the caller sees but may never call (not active, a role, unsafe, the
    no-schema rules) is ``not_allowed`` and never valid, by the same rule as
    tool-calls/validate (``not_allowed_reason``); one hidden by policy is not
    found, as there."""
    access = access if access is not None else access_for(actor)
    reason = not_allowed_reason(catalog, access, tool)
    if reason == HIDDEN:
        raise Http404(f"tool: no tool {tool.name!r} in {catalog.slug!r}")
    check = validate_arguments(
        tool_to_spec(tool), arguments, key=f"{tool.pk}:{tool.content_hash}"
    )
    valid = check.valid and not reason
    answer = {
        "tool": tool.name,
        "tool_version": tool.version,
        "valid": valid,
        "validated": check.validated,
        "no_schema_mode": check.no_schema_mode,
        "arguments": check.arguments if valid else None,
        "errors": [asdict(problem) for problem in check.errors],
        "flags": _flags(tool, reason),
        "hint": why_not_allowed(tool, reason) if reason else "",
    }
    return record_validation(
        catalog,
        actor=actor,
        request_id=request_id,
        summary=f"{tool.name}: {'valid' if valid else 'invalid'}",
        input={"tool": tool.name, "arguments": arguments},
        output=answer,
    )


def _flags(tool: Tool, reason: str) -> list[str]:
    """The flags tool-calls/validate would give this tool's call (its order)."""
    found = {
        "not_allowed": bool(reason),
        "unsafe": not tool.safe,
        "requires_approval": tool.requires_approval
        or (tool.parameters is None and tool.no_schema_mode == "human-approval"),
        "no_schema": tool.parameters is None,
    }
    return [flag for flag in FLAGS if found.get(flag)]
