"""Build ``ToolRecord``s from Quiver's canonical tool JSON (``ToolSpec.to_dict``).

The app and the benchmark both hold canonical tool dictionaries; this keeps the
translation (schema -> parameter text, Decimal cost -> float, prompt-token
estimate) in one place and free of Django; the text facts themselves come from
catalog.tool_text, shared with the embedding text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from catalog.tool_text import definition_tokens, schema_properties
from selection.engine.types import ToolRecord


def param_text(parameters: Mapping[str, Any] | None) -> str:
    """Parameter names (split into words) and descriptions as one passage."""
    parts = []
    for words, desc in schema_properties(parameters):
        name = " ".join(words)
        parts.append(f"{name}: {desc}" if desc else name)
    return "; ".join(parts)


def estimate_prompt_tokens(data: Mapping[str, Any]) -> int:
    """The catalog's estimate (catalog.tool_text) for a tool given as a dictionary;
    the app passes the stored ``prompt_tokens``, so this serves scripts and tests."""
    function = {
        "name": data.get("provider_name") or data.get("name", ""),
        "description": data.get("description", ""),
        "parameters": data.get("parameters") or {"type": "object", "properties": {}},
    }
    return definition_tokens({"type": "function", "function": function})


def _strings(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list-of-strings field as a tuple (missing -> empty)."""
    return tuple(str(v) for v in data.get(key) or ())


def record_from_dict(data: Mapping[str, Any], row_id: int, position: int) -> ToolRecord:
    """A ``ToolRecord`` from one canonical tool dictionary."""
    params = data.get("parameters")
    return ToolRecord(
        id=row_id,
        name=str(data["name"]),
        provider_name=str(data.get("provider_name") or ""),
        original_name=str(data.get("original_name") or ""),
        title=str(data.get("title") or ""),
        description=str(data.get("description") or ""),
        category=str(data.get("category") or ""),
        tags=_strings(data, "tags"),
        keywords=_strings(data, "keywords"),
        examples=_strings(data, "examples"),
        avoid_when=str(data.get("avoid_when") or ""),
        param_text=param_text(params),
        safe=bool(data.get("safe", True)),
        risk_level=str(data.get("risk_level") or "low"),
        requires_approval=bool(data.get("requires_approval", False)),
        allowed_roles=_strings(data, "allowed_roles"),
        allow_no_schema=bool(data.get("allow_no_schema", False)),
        no_schema_mode=str(data.get("no_schema_mode") or ""),
        capabilities=_strings(data, "capabilities"),
        cost_per_call=float(data.get("cost_per_call") or 0),
        prompt_tokens=int(data.get("prompt_tokens") or estimate_prompt_tokens(data)),
        status=str(data.get("status") or "active"),
        position=position,
        has_schema=isinstance(params, Mapping),
    )
