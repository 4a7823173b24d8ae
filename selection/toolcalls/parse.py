"""Finding the tool calls in a model's output, whatever provider produced it (pure).

The shapes of ``openai``, ``openai-responses``, ``anthropic``, ``ollama`` and ``mcp``
(names as in ``catalog.formats``) are read; items that are not tool calls are
skipped. A document that is none of these, or a call without a name, is a
``ShapeError`` naming where; arguments that cannot be parsed are not an error here:
the call carries the problem and the caller reports it as a result.
Each shape: docs/reference/tool-calls.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalog.schema_policy import parse_arguments

CALL_FORMATS = ("openai", "openai-responses", "anthropic", "ollama", "mcp")
MAX_CALLS = 128
ROOT = "output"
# Item "type"s that are never tool calls: skipped, not refused.
_SKIPPED_TYPES = frozenset(
    {
        "text",
        "message",
        "reasoning",
        "thinking",
        "redacted_thinking",
        "output_text",
        "tool_result",
        "server_tool_use",
        "web_search_call",
        "file_search_call",
        "image",
    }
)


class ShapeError(ValueError):
    """The output is not a shape we read; ``field`` is a path like
    ``output.choices[0].message.tool_calls[1].function.name``."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


@dataclass(frozen=True)
class ToolCall:
    """One call as the model made it: the name it used, its id, and the arguments
    decoded to an object (``None`` with ``parse_error`` set when they could not be)."""

    index: int
    name: str
    call_id: str | None
    arguments: dict[str, Any] | None
    raw_arguments: Any
    parse_error: str
    format: str


@dataclass(frozen=True)
class ParsedOutput:
    """The calls found, in order, and the format they were read as."""

    format: str
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class _Raw:
    """A call located in the document, before its fields are read."""

    path: str
    item: dict[str, Any]
    kind: str  # "tool_calls", "openai-responses", "anthropic" or "mcp"


def parse_tool_calls(document: Any, fmt: str | None = None) -> ParsedOutput:
    """Every tool call in ``document``; ``fmt`` forces the format (else detected)."""
    if fmt is not None and fmt not in CALL_FORMATS:
        raise ShapeError("format", f"must be one of {', '.join(CALL_FORMATS)}")
    located = _locate(document, ROOT)
    if len(located) > MAX_CALLS:
        raise ShapeError(ROOT, f"at most {MAX_CALLS} tool calls (got {len(located)})")
    calls = tuple(_read(raw, index, fmt) for index, raw in enumerate(located))
    return ParsedOutput(_overall_format(calls, fmt), calls)


def _overall_format(calls: tuple[ToolCall, ...], fmt: str | None) -> str:
    """The forced format, else the calls' one format (``mixed`` or ``none``)."""
    if fmt is not None:
        return fmt
    found = {call.format for call in calls}
    if not found:
        return "none"
    return found.pop() if len(found) == 1 else "mixed"


# Locating the calls ----------------------------------------------------------------


def _locate(document: Any, path: str) -> list[_Raw]:
    """The calls in a whole document: a list of items or one container/item."""
    if isinstance(document, list):
        found: list[_Raw] = []
        for index, item in enumerate(document):
            found.extend(_locate_item(item, f"{path}[{index}]"))
            if len(found) > MAX_CALLS:
                break
        return found
    if isinstance(document, dict):
        return _locate_container(document, path)
    raise ShapeError(path, "must be a JSON object or a list of tool calls")


def _locate_container(doc: dict[str, Any], path: str) -> list[_Raw]:
    """A response or a message holding calls, else one call item."""
    if "choices" in doc:
        return _locate_choices(doc["choices"], f"{path}.choices")
    if isinstance(doc.get("message"), dict):
        return _locate_message(doc["message"], f"{path}.message")
    if isinstance(doc.get("output"), list):
        return _locate_list(doc["output"], f"{path}.output")
    if "role" in doc or "tool_calls" in doc:
        return _locate_message(doc, path)
    if isinstance(doc.get("content"), list):
        return _locate_list(doc["content"], f"{path}.content")
    return _locate_item(doc, path)


def _locate_choices(choices: Any, path: str) -> list[_Raw]:
    """Chat Completions: the first choice's message (the one a client acts on)."""
    if not isinstance(choices, list) or not choices:
        raise ShapeError(path, "must be a non-empty list")
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        raise ShapeError(f"{path}[0].message", "is required (an object)")
    return _locate_message(first["message"], f"{path}[0].message")


def _locate_message(message: dict[str, Any], path: str) -> list[_Raw]:
    """An assistant message: its ``tool_calls``, else ``tool_use`` content blocks."""
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise ShapeError(f"{path}.tool_calls", "must be a list")
        return _locate_list(tool_calls, f"{path}.tool_calls")
    content = message.get("content")
    if isinstance(content, list):
        return _locate_list(content, f"{path}.content")
    return []


def _locate_list(items: list[Any], path: str) -> list[_Raw]:
    found: list[_Raw] = []
    for index, item in enumerate(items):
        found.extend(_locate_item(item, f"{path}[{index}]"))
        if len(found) > MAX_CALLS:
            break
    return found


def _locate_item(item: Any, path: str) -> list[_Raw]:
    """One item: a call of some provider, a skipped non-call item, or an error."""
    if not isinstance(item, dict):
        raise ShapeError(path, "must be a JSON object")
    kind = item.get("type")
    if kind == "function_call":
        return [_Raw(path, item, "openai-responses")]
    if kind == "tool_use":
        return [_Raw(path, item, "anthropic")]
    if "jsonrpc" in item or "method" in item:
        return [_Raw(path, item, "mcp")]
    if "function" in item:
        return [_Raw(path, item, "tool_calls")]
    if isinstance(kind, str) and kind in _SKIPPED_TYPES:
        return []
    if any(key in item for key in ("choices", "output", "content", "message")):
        return _locate_container(item, path)
    raise ShapeError(
        path,
        "is not a tool call (expected OpenAI tool_calls or function_call items, "
        "Anthropic tool_use blocks, Ollama tool_calls or MCP tools/call requests)",
    )


# Reading one call ------------------------------------------------------------------


def _read(raw: _Raw, index: int, fmt: str | None) -> ToolCall:
    name, call_id, arguments, path = _READERS[raw.kind](raw)
    call_format = _call_format(raw, arguments, fmt)
    if not isinstance(name, str) or not name.strip():
        raise ShapeError(path, "is required (a non-empty string)")
    parsed, problem = _decode(arguments)
    # MCP request ids may be numbers; booleans are neither.
    if isinstance(call_id, bool) or not isinstance(call_id, (str, int)):
        call_id = None
    return ToolCall(
        index=index,
        name=name,
        call_id=None if call_id is None else str(call_id),
        arguments=parsed,
        raw_arguments=None if arguments is _MISSING else arguments,
        parse_error=problem,
        format=call_format,
    )


def _call_format(raw: _Raw, arguments: Any, fmt: str | None) -> str:
    """The call's format: ``tool_calls`` entries are OpenAI with a string
    (or missing) ``arguments``, Ollama with an object; a forced format must fit."""
    detected = raw.kind
    if raw.kind == "tool_calls":
        detected = "ollama" if isinstance(arguments, dict) else "openai"
        if fmt in ("openai", "ollama"):
            detected = fmt
    if fmt is not None and fmt != detected:
        raise ShapeError(raw.path, f"is a {detected} tool call, not {fmt}")
    return detected


_MISSING = object()


def _decode(arguments: Any) -> tuple[dict[str, Any] | None, str]:
    """The arguments as an object, or ``None`` and why they could not be read."""
    if arguments is _MISSING:
        return None, "arguments are missing"
    if not isinstance(arguments, (str, dict)):
        return None, "arguments must be a JSON object"
    parsed, problem = parse_arguments(arguments)
    if parsed is None:
        return None, problem.message if problem is not None else "not a JSON object"
    return parsed, ""


Fields = tuple[Any, Any, Any, str]


def _read_tool_calls_entry(raw: _Raw) -> Fields:
    function = raw.item.get("function")
    if not isinstance(function, dict):
        raise ShapeError(f"{raw.path}.function", "must be an object")
    arguments = function.get("arguments", _MISSING)
    return (
        function.get("name"),
        raw.item.get("id"),
        arguments,
        f"{raw.path}.function.name",
    )


def _read_responses_item(raw: _Raw) -> Fields:
    item = raw.item
    call_id = item.get("call_id", item.get("id"))
    return (
        item.get("name"),
        call_id,
        item.get("arguments", _MISSING),
        f"{raw.path}.name",
    )


def _read_tool_use(raw: _Raw) -> Fields:
    item = raw.item
    return (
        item.get("name"),
        item.get("id"),
        item.get("input", _MISSING),
        f"{raw.path}.name",
    )


def _read_mcp(raw: _Raw) -> Fields:
    item = raw.item
    if item.get("method") != "tools/call":
        raise ShapeError(f"{raw.path}.method", "must be tools/call")
    params = item.get("params")
    if not isinstance(params, dict):
        raise ShapeError(f"{raw.path}.params", "must be an object")
    # MCP makes ``arguments`` optional: a tool without parameters gets none.
    arguments = params.get("arguments", {})
    return params.get("name"), item.get("id"), arguments, f"{raw.path}.params.name"


_READERS: dict[str, Callable[[_Raw], Fields]] = {
    "tool_calls": _read_tool_calls_entry,
    "openai-responses": _read_responses_item,
    "anthropic": _read_tool_use,
    "mcp": _read_mcp,
}
