"""Pure translation between ``ToolSpec`` and the tool formats providers speak.

Import, export and the selection answer all go through these functions, so a tool
looks the same wherever it leaves Quiver. Following seed 001 the canonical schema is
never rewritten: every exported schema is a deep copy equal to the stored one, and
provider formats only change the envelope around it and the name (OpenAI-style
providers demand ``^[a-zA-Z0-9_-]{1,64}$``; see ``catalog.naming``). A tool
imported under a safe name keeps the file's as ``original_name``: canonical JSON
carries it (importing the export again gives the same tool) and MCP shows it as
the ``title`` when the tool has none.

Formats: ``canonical`` (Quiver JSON), ``openai`` (Chat Completions),
``openai-responses``, ``anthropic``, ``ollama`` and ``mcp`` (``tools/list``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from catalog.naming import provider_safe_name
from catalog.spec import SpecError, ToolSpec, spec_from_dict
from catalog.tool_text import definition_tokens

FORMATS = ("canonical", "openai", "openai-responses", "anthropic", "ollama", "mcp")
PROVIDER_FORMATS = FORMATS[1:]
CANONICAL_FORMAT_NAME = "quiver"
CANONICAL_VERSION = 1


class FormatError(ValueError):
    """A document (or format name) that none of the known formats can read."""


@dataclass
class ImportItem:
    """One tool of an imported document: a spec, or an error naming where it failed.

    ``error`` reads like ``tools[3].function.name: is required``.
    """

    index: int
    spec: ToolSpec | None
    error: str | None


def _check_format(fmt: str) -> None:
    """Refuse a format name that is not in ``FORMATS``."""
    if fmt not in FORMATS:
        raise FormatError(
            f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}"
        )


def empty_object_schema() -> dict[str, Any]:
    """What providers get for a no-schema tool: an object without properties."""
    return {"type": "object", "properties": {}}


# Export ---------------------------------------------------------------------------


def export_tool(spec: ToolSpec, fmt: str) -> dict[str, Any]:
    """``spec`` as one tool definition of format ``fmt`` (the spec is not changed)."""
    _check_format(fmt)
    return _EXPORTERS[fmt](spec)


def export_tools(specs: Iterable[ToolSpec], fmt: str) -> dict[str, Any] | list[Any]:
    """A whole document of format ``fmt``.

    ``canonical`` gives ``{"format": "quiver", "version": 1, "tools": [...]}``,
    ``mcp`` a ``tools/list`` result ``{"tools": [...]}``, the others a plain list
    (what goes into a request's ``tools``).
    """
    tools = [export_tool(spec, fmt) for spec in specs]
    if fmt == "canonical":
        return {
            "format": CANONICAL_FORMAT_NAME,
            "version": CANONICAL_VERSION,
            "tools": tools,
        }
    if fmt == "mcp":
        return {"tools": tools}
    return tools


def exported_name(spec: ToolSpec) -> str:
    """The name providers see: the assigned provider name, else a safe form of it."""
    return provider_safe_name(spec.provider_name or spec.name)


def _provider_schema(spec: ToolSpec, private: bool = True) -> dict[str, Any]:
    """A private copy of the canonical schema (or the empty object schema);
    ``private=False`` shares it (only read, e.g. measured as JSON)."""
    if spec.parameters is None:
        return empty_object_schema()
    return json_copy(spec.parameters) if private else spec.parameters


def json_copy(value: Any) -> Any:
    """``copy.deepcopy`` for JSON data, several times faster: dicts and lists are
    copied, immutable scalars shared, anything else deep-copied."""
    if isinstance(value, dict):
        return {key: json_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_copy(item) for item in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    return copy.deepcopy(value)


def _export_canonical(spec: ToolSpec) -> dict[str, Any]:
    """Quiver JSON with a private copy of the schema."""
    data = spec.to_dict()
    data["parameters"] = json_copy(spec.parameters)
    return data


def _function_body(
    spec: ToolSpec, with_strict: bool, private: bool = True
) -> dict[str, Any]:
    """``name``, ``description``, ``parameters`` and (when set) ``strict``."""
    body: dict[str, Any] = {
        "name": exported_name(spec),
        "description": spec.description,
        "parameters": _provider_schema(spec, private),
    }
    if with_strict and spec.strict is not None:
        body["strict"] = spec.strict
    return body


def _export_openai(spec: ToolSpec) -> dict[str, Any]:
    """Chat Completions: the function body under ``function``."""
    return {"type": "function", "function": _function_body(spec, with_strict=True)}


def _export_responses(spec: ToolSpec) -> dict[str, Any]:
    """Responses API: the function body flattened into the tool."""
    return {"type": "function", **_function_body(spec, with_strict=True)}


def _export_ollama(spec: ToolSpec) -> dict[str, Any]:
    """Ollama: the Chat Completions shape without ``strict``."""
    return {"type": "function", "function": _function_body(spec, with_strict=False)}


def _export_anthropic(spec: ToolSpec) -> dict[str, Any]:
    """Anthropic client tool: the schema is ``input_schema``."""
    return {
        "name": exported_name(spec),
        "description": spec.description,
        "input_schema": _provider_schema(spec),
    }


def _export_mcp(spec: ToolSpec) -> dict[str, Any]:
    """An MCP ``tools/list`` entry with title and hint annotations."""
    tool: dict[str, Any] = {"name": exported_name(spec)}
    title = _mcp_title(spec)
    if title:
        tool["title"] = title
    tool["description"] = spec.description
    tool["inputSchema"] = _provider_schema(spec)
    annotations = _mcp_annotations(spec, title)
    if annotations:
        tool["annotations"] = annotations
    return tool


def _mcp_title(spec: ToolSpec) -> str:
    """The spec's title, else a string ``title`` kept from imported annotations,
    else the original name (what a person knew the tool as before it was given a
    safe name)."""
    kept = spec.annotations.get("title")
    return spec.title or (kept if isinstance(kept, str) else "") or spec.original_name


def _mcp_annotations(spec: ToolSpec, title: str) -> dict[str, Any]:
    """Stored annotations plus the hints Quiver's own metadata implies.

    ``destructiveHint`` is forced on for unsafe tools so a client can never be told
    an unsafe tool is harmless, whatever the stored annotations say; a tool that
    is destructive (unsafe, or so annotated) is never also ``readOnlyHint``, even
    when its capabilities or stored annotations say read-only: a definition never
    contradicts itself, and where it would, it fails closed.
    """
    annotations = copy.deepcopy(spec.annotations)
    if title:
        annotations["title"] = title
    if not spec.safe:
        annotations["destructiveHint"] = True
    if annotations.get("destructiveHint") is True:
        if "readOnlyHint" in annotations:
            annotations["readOnlyHint"] = False
    elif "read-only" in spec.capabilities:
        annotations["readOnlyHint"] = True
    return annotations


_EXPORTERS: dict[str, Callable[[ToolSpec], dict[str, Any]]] = {
    "canonical": _export_canonical,
    "openai": _export_openai,
    "openai-responses": _export_responses,
    "anthropic": _export_anthropic,
    "ollama": _export_ollama,
    "mcp": _export_mcp,
}


def estimate_prompt_tokens(spec: ToolSpec) -> int:
    """An estimate (not a tokenizer count) of the prompt tokens the tool costs.

    Uses the compact JSON of the OpenAI definition at about four characters per
    token plus a fixed overhead for the framing a provider adds; good enough to
    budget how many tools fit in a request, not for billing.
    """
    # The OpenAI definition, its schema shared (not copied): it is only measured.
    body = _function_body(spec, with_strict=True, private=False)
    return definition_tokens({"type": "function", "function": body})


# Detection ------------------------------------------------------------------------


def detect_format(document: Any) -> str:
    """The format of a parsed JSON document (a dict or a list of tools).

    The OpenAI and Ollama shapes are the same, so that shape is reported as
    ``openai``; reading it either way gives the same tools. An empty tool list is
    reported as ``canonical`` (a bare list) or ``mcp`` (``{"tools": []}``).
    """
    if isinstance(document, list):
        return _detect_items(document, "canonical")
    if not isinstance(document, dict):
        raise FormatError("a tool document must be a JSON object or array")
    if "format" in document:
        if document["format"] == CANONICAL_FORMAT_NAME:
            return "canonical"
        raise FormatError(f"unknown document format {document['format']!r}")
    if "jsonrpc" in document:
        _jsonrpc_tools(document)
        return "mcp"
    return _detect_items(_tools_member(document), "mcp")


def _detect_items(items: list[Any], empty_default: str) -> str:
    """The format of the first item whose shape is recognised."""
    for item in items:
        found = _item_format(item)
        if found is not None:
            return found
    if not items:
        return empty_default
    raise FormatError(
        "no item looks like a tool of a known format (canonical, openai, "
        "openai-responses, anthropic, ollama, mcp)"
    )


def _item_format(item: Any) -> str | None:
    """The format one tool item looks like, or None if unrecognised."""
    if not isinstance(item, dict):
        return None
    if "inputSchema" in item:
        return "mcp"
    if "input_schema" in item:
        return "anthropic"
    if item.get("type") == "function":
        if isinstance(item.get("function"), dict):
            return "openai"
        return "openai-responses" if "name" in item else None
    if "name" in item and (
        "parameters" in item or set(item) <= set(ToolSpec.field_names())
    ):
        return "canonical"
    return None


def _tools_member(document: dict[str, Any]) -> list[Any]:
    """The ``tools`` list of a wrapping object."""
    tools = document.get("tools")
    if not isinstance(tools, list):
        raise FormatError('expected a list of tools or an object with a "tools" list')
    return tools


def _jsonrpc_tools(document: dict[str, Any]) -> list[Any]:
    """The tools of a JSON-RPC ``tools/list`` response."""
    if "error" in document:
        raise FormatError(f"the JSON-RPC response is an error: {document['error']!r}")
    result = document.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        raise FormatError('a JSON-RPC document needs "result": {"tools": [...]}')
    return list(result["tools"])


def _container_items(document: Any, fmt: str) -> list[Any]:
    """The list of tool items inside ``document`` read as format ``fmt``."""
    if isinstance(document, list):
        return document
    if not isinstance(document, dict):
        raise FormatError("a tool document must be a JSON object or array")
    if "jsonrpc" in document:
        if fmt != "mcp":
            raise FormatError(f"a JSON-RPC document cannot be read as {fmt!r}")
        return _jsonrpc_tools(document)
    if "format" in document:
        _check_canonical_header(document, fmt)
    return _tools_member(document)


def _check_canonical_header(document: dict[str, Any], fmt: str) -> None:
    """A Quiver document must be read as canonical, version 1."""
    if fmt != "canonical" or document["format"] != CANONICAL_FORMAT_NAME:
        raise FormatError(
            f"a {document['format']!r} document cannot be read as {fmt!r}"
        )
    if document.get("version") != CANONICAL_VERSION:
        raise FormatError(
            f"unsupported quiver document version {document.get('version')!r}; "
            f"expected {CANONICAL_VERSION}"
        )


# Import ---------------------------------------------------------------------------


def import_tools(document: Any, fmt: str | None = None) -> list[ImportItem]:
    """Read every tool of ``document`` (format ``fmt``, detected when omitted).

    A bad item becomes an ``ImportItem`` whose error names its index, field and rule,
    while the good items still come through; a document whose shape is not known
    raises ``FormatError``. Schemas and annotations are deep-copied, never shared
    with ``document``.
    """
    chosen = fmt if fmt is not None else detect_format(document)
    _check_format(chosen)
    parser = _PARSERS[chosen]
    items = _container_items(document, chosen)
    return [_import_item(index, item, parser) for index, item in enumerate(items)]


def _import_item(
    index: int, item: Any, parser: Callable[[dict[str, Any]], ToolSpec]
) -> ImportItem:
    """Parse one item, turning a field error into an indexed message."""
    if not isinstance(item, dict):
        return ImportItem(index, None, f"tools[{index}]: must be a JSON object")
    try:
        spec = parser(item)
    except SpecError as exc:
        return ImportItem(index, None, f"tools[{index}].{exc.field}: {exc.rule}")
    return ImportItem(index, spec, None)


def _parse_canonical(item: dict[str, Any]) -> ToolSpec:
    """Quiver JSON, read through ``spec_from_dict`` on a copy."""
    return spec_from_dict(json_copy(item))


def _parse_openai(item: dict[str, Any]) -> ToolSpec:
    """Chat Completions (and Ollama): ``{"type": "function", "function": {...}}``."""
    _require_function_type(item)
    function = item.get("function")
    if function is None:
        raise SpecError("function", "is required")
    if not isinstance(function, dict):
        raise SpecError("function", "must be a JSON object")
    return _function_spec(function, "function.")


def _parse_responses(item: dict[str, Any]) -> ToolSpec:
    """Responses API: ``{"type": "function", "name": ..., "parameters": ...}``."""
    _require_function_type(item)
    return _function_spec(item, "")


def _function_spec(data: dict[str, Any], prefix: str) -> ToolSpec:
    """The fields shared by the OpenAI-style shapes (``prefix`` locates errors)."""
    return ToolSpec(
        name=_name(data, prefix),
        description=_optional_str(data, "description", prefix),
        parameters=_schema(data, "parameters", prefix, required=False),
        strict=_strict(data, prefix),
    )


def _parse_anthropic(item: dict[str, Any]) -> ToolSpec:
    """Anthropic client tools; server tools (other ``type`` values) are refused."""
    kind = item.get("type", "custom")
    if kind != "custom":
        raise SpecError("type", f"{kind!r} is not a client tool")
    return ToolSpec(
        name=_name(item, ""),
        description=_optional_str(item, "description", ""),
        parameters=_schema(item, "input_schema", "", required=True),
    )


def _parse_mcp(item: dict[str, Any]) -> ToolSpec:
    """An MCP tool; ``destructiveHint: true`` makes the tool unsafe (risk "high").

    Every other annotation (``readOnlyHint``, ``title``, ...) is kept as is so an
    export reproduces it.
    """
    annotations = item.get("annotations", {})
    if annotations is None:
        annotations = {}
    if not isinstance(annotations, dict):
        raise SpecError("annotations", "must be a JSON object")
    annotations = json_copy(annotations)
    destructive = annotations.get("destructiveHint") is True
    if destructive:
        del annotations["destructiveHint"]
    kept_title = annotations.get("title")
    title = _optional_str(item, "title", "") or (
        kept_title if isinstance(kept_title, str) else ""
    )
    return ToolSpec(
        name=_name(item, ""),
        title=title,
        description=_optional_str(item, "description", ""),
        parameters=_schema(item, "inputSchema", "", required=True),
        safe=not destructive,
        risk_level="high" if destructive else "low",
        annotations=annotations,
    )


def _require_function_type(item: dict[str, Any]) -> None:
    """OpenAI-style items must say ``"type": "function"``."""
    if "type" not in item:
        raise SpecError("type", "is required")
    if item["type"] != "function":
        raise SpecError("type", f'must be "function", not {item["type"]!r}')


def _name(data: dict[str, Any], prefix: str) -> str:
    """A required, non-empty string name."""
    value = data.get("name")
    if value is None:
        raise SpecError(f"{prefix}name", "is required")
    if not isinstance(value, str):
        raise SpecError(f"{prefix}name", "must be a string")
    if not value.strip():
        raise SpecError(f"{prefix}name", "must not be empty")
    return value


def _optional_str(data: dict[str, Any], key: str, prefix: str) -> str:
    """An optional string field (null reads as empty)."""
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SpecError(f"{prefix}{key}", "must be a string")
    return value


def _schema(
    data: dict[str, Any], key: str, prefix: str, *, required: bool
) -> dict[str, Any] | None:
    """A JSON Schema object field, deep-copied; null reads as absent."""
    value = data.get(key)
    if value is None:
        if required:
            raise SpecError(f"{prefix}{key}", "is required")
        return None
    if not isinstance(value, dict):
        raise SpecError(f"{prefix}{key}", "must be a JSON object (a JSON Schema)")
    return json_copy(value)


def _strict(data: dict[str, Any], prefix: str) -> bool | None:
    """An optional ``strict`` flag: true, false or null."""
    value = data.get("strict")
    if value is not None and not isinstance(value, bool):
        raise SpecError(f"{prefix}strict", "must be true, false or null")
    return value


_PARSERS: dict[str, Callable[[dict[str, Any]], ToolSpec]] = {
    "canonical": _parse_canonical,
    "openai": _parse_openai,
    "openai-responses": _parse_responses,
    "anthropic": _parse_anthropic,
    "ollama": _parse_openai,
    "mcp": _parse_mcp,
}
