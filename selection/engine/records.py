"""Build ``ToolRecord``s from Quiver's canonical tool JSON (``ToolSpec.to_dict``).

The app and the benchmark both hold canonical tool dictionaries; this keeps the
translation (schema -> parameter text, Decimal cost -> float, prompt-token
estimate) in one place and free of Django.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from selection.engine.text import split_identifier
from selection.engine.types import ToolRecord

MAX_PARAM_DEPTH = 2
CHARS_PER_TOKEN = 4


def _properties(schema: Any, prefix: str, depth: int) -> Iterator[tuple[str, str]]:
    """(dotted name words, description) for schema properties, nested objects too."""
    if not isinstance(schema, Mapping) or depth > MAX_PARAM_DEPTH:
        return
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return
    for raw, prop in props.items():
        name = f"{prefix} {split_identifier(str(raw)).replace('_', ' ')}".strip()
        desc = prop.get("description") if isinstance(prop, Mapping) else None
        yield name, desc if isinstance(desc, str) else ""
        if isinstance(prop, Mapping):
            nested = prop.get("items") if prop.get("type") == "array" else prop
            yield from _properties(nested, name, depth + 1)


def param_text(parameters: Mapping[str, Any] | None) -> str:
    """Parameter names (split into words) and descriptions as one passage."""
    parts = []
    for name, desc in _properties(parameters, "", 1):
        parts.append(f"{name}: {desc}" if desc else name)
    return "; ".join(parts)


def estimate_prompt_tokens(data: Mapping[str, Any]) -> int:
    """Rough token cost of showing the tool to a model (JSON length / 4)."""
    shown = {
        "name": data.get("name", ""),
        "description": data.get("description", ""),
        "parameters": data.get("parameters") or {},
    }
    return max(1, len(json.dumps(shown, separators=(",", ":"))) // CHARS_PER_TOKEN)


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
