"""Validating a model's tool call against the canonical schema (seed 001), audited."""

from __future__ import annotations

import uuid
from dataclasses import asdict
from typing import Any

from audit.choices import EventType
from audit.services import record_event
from catalog.access import Access
from catalog.models import Catalog, Tool
from catalog.schema_policy import validate_arguments
from catalog.services.tools import tool_to_spec


def find_tool(catalog: Catalog, name: str, access: Access) -> Tool | None:
    """A tool the caller may see, by its name or the provider-safe name the model
    saw; a tool the caller could never be offered is not found (no hint)."""
    tools = Tool.objects.visible_to(access).filter(catalog=catalog)
    return tools.filter(name=name).first() or tools.filter(provider_name=name).first()


def validate_tool_call(
    catalog: Catalog,
    tool: Tool,
    arguments: dict[str, Any] | str,
    *,
    actor: Any,
    request_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """Parse -> validate with the tool version's compiled validator; one audit row."""
    check = validate_arguments(
        tool_to_spec(tool), arguments, key=f"{tool.pk}:{tool.content_hash}"
    )
    answer = {
        "tool": tool.name,
        "tool_version": tool.version,
        "valid": check.valid,
        "validated": check.validated,
        "no_schema_mode": check.no_schema_mode,
        "arguments": check.arguments,
        "errors": [asdict(problem) for problem in check.errors],
    }
    event = record_event(
        EventType.VALIDATION,
        actor=actor,
        request_id=request_id,
        catalog_slug=catalog.slug,
        catalog_version=catalog.version,
        summary=f"{tool.name}: {'valid' if check.valid else 'invalid'}",
        input={"tool": tool.name, "arguments": arguments},
        output=answer,
    )
    return {"validation_id": str(event.request_id), **answer}
