"""The canonical tool definition, as plain Python (no Django).

A ``ToolSpec`` is what every provider format translates to and from, what an import
item becomes before it is written, and what the selection engine's snapshot is built
from. Its dictionary form (``to_dict``) is Quiver's canonical JSON for one tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from decimal import Decimal, InvalidOperation
from typing import Any

NO_SCHEMA_MODES = ("read-only", "human-approval", "full")
RISK_LEVELS = ("low", "medium", "high", "critical")
STATUSES = ("active", "disabled", "deprecated")
KNOWN_CAPABILITIES = ("streaming", "batch", "async", "idempotent", "read-only")


@dataclass
class ToolSpec:
    """One tool's canonical definition plus the metadata that ranking and policy use."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    title: str = ""
    strict: bool | None = None
    allow_no_schema: bool = False
    no_schema_mode: str = ""
    safe: bool = True
    risk_level: str = "low"
    requires_approval: bool = False
    capabilities: list[str] = field(default_factory=list)
    category: str = ""
    tags: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    avoid_when: str = ""
    allowed_roles: list[str] = field(default_factory=list)
    cost_per_call: Decimal = Decimal("0")
    currency: str = "USD"
    status: str = "active"
    annotations: dict[str, Any] = field(default_factory=dict)
    provider_name: str = ""
    # The name the tool's file or server gave it, kept when Quiver gave it a
    # safe one (an import's names=rename, a sync): shown, searched, exported.
    original_name: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Quiver's canonical JSON for this tool (the schema passes through as is;
        the other lists and objects are the dict's own copies, as ``asdict`` made
        them, without its per-value deep copies: a third of exporting a tool)."""
        data = {name: _own(getattr(self, name)) for name in _FIELD_NAMES}
        data["parameters"] = self.parameters
        data["cost_per_call"] = format(self.cost_per_call, "f")
        return data

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def _own(value: Any) -> Any:
    """A JSON value with its own lists and dicts (strings and numbers shared)."""
    if isinstance(value, list):
        return [_own(item) for item in value]
    if isinstance(value, dict):
        return {key: _own(item) for key, item in value.items()}
    return value


_FIELD_NAMES = tuple(f.name for f in fields(ToolSpec))


class SpecError(ValueError):
    """A canonical tool dictionary that cannot become a ToolSpec; names the field."""

    def __init__(self, field_name: str, rule: str) -> None:
        super().__init__(f"{field_name}: {rule}")
        self.field = field_name
        self.rule = rule


_LIST_FIELDS = ("capabilities", "tags", "keywords", "examples", "allowed_roles")
_STR_FIELDS = (
    "name",
    "description",
    "title",
    "no_schema_mode",
    "risk_level",
    "category",
    "avoid_when",
    "currency",
    "status",
    "provider_name",
    "original_name",
)
_BOOL_FIELDS = ("allow_no_schema", "safe", "requires_approval")


def spec_from_dict(data: dict[str, Any]) -> ToolSpec:
    """A ToolSpec from canonical JSON, checking types; unknown keys are an error."""
    if not isinstance(data, dict):
        raise SpecError("tool", "must be a JSON object")
    unknown = sorted(set(data) - set(ToolSpec.field_names()))
    if unknown:
        raise SpecError(unknown[0], "is not a known tool field")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        kwargs[key] = _coerce(key, value)
    if "name" not in kwargs:
        raise SpecError("name", "is required")
    return ToolSpec(**kwargs)


def _coerce(key: str, value: Any) -> Any:
    if key in _STR_FIELDS:
        if value is None:
            return ""
        if not isinstance(value, str):
            raise SpecError(key, "must be a string")
        return value
    if key in _BOOL_FIELDS:
        if not isinstance(value, bool):
            raise SpecError(key, "must be true or false")
        return value
    if key in _LIST_FIELDS:
        return _string_list(key, value)
    if key == "strict":
        if value is not None and not isinstance(value, bool):
            raise SpecError(key, "must be true, false or null")
        return value
    if key == "parameters":
        if value is not None and not isinstance(value, dict):
            raise SpecError(key, "must be a JSON object (a JSON Schema) or null")
        return value
    if key == "annotations":
        if not isinstance(value, dict):
            raise SpecError(key, "must be a JSON object")
        return value
    if key == "cost_per_call":
        return _decimal(key, value)
    return value


def _string_list(key: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError(key, "must be a list of strings")
    return list(value)


def _decimal(key: str, value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SpecError(key, "must be a number")
    try:
        amount = Decimal(str(value))
    except InvalidOperation as exc:
        raise SpecError(key, "must be a number") from exc
    if not amount.is_finite() or amount < 0:
        raise SpecError(key, "must be a finite number of at least 0")
    return amount
