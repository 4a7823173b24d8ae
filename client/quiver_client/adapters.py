"""Pure translation between Quiver's answers and the providers' client-side tool
search contracts (no I/O; the clients in ``quiver_client.client`` and
``quiver_client.aio`` call these).

Anthropic (Messages API): every tool goes into ``tools`` with
``defer_loading: true`` next to one non-deferred client tool, ``search_tools``;
the model calls it and the answer is a ``tool_result`` whose content is
``tool_reference`` blocks naming deferred tools, which the API then loads.

OpenAI (Responses API): ``{"type": "tool_search", "execution": "client"}`` in
``tools``; the model emits a ``tool_search_call`` item and the client answers
with a ``tool_search_output`` item carrying full function definitions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

SEARCH_TOOL_NAME = "search_tools"
DEFAULT_MAX_RESULTS = 5
MAX_RESULTS_LIMIT = 20

SEARCH_DESCRIPTION = (
    "Search the tool catalog for the tools that fit the task at hand. Describe "
    "what you need to do in plain words (or name a tool exactly); the matching "
    "tools become available to call."
)


def search_parameters() -> dict[str, Any]:
    """The JSON Schema of the search tool's arguments (both providers)."""
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What the tool must do, in plain words, or its name.",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS_LIMIT,
                "description": f"How many tools at most ({DEFAULT_MAX_RESULTS} "
                "unless given).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


class SearchArgumentsError(ValueError):
    """The model's search call has no usable ``query`` or a bad ``max_results``."""


def field(item: Any, name: str) -> Any:
    """``item[name]`` for a dict, ``item.name`` for an SDK object, else None."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def search_arguments(arguments: Any) -> tuple[str, int]:
    """``(query, max_results)`` from a search call's arguments (an object or its
    JSON text); ``SearchArgumentsError`` naming the argument otherwise."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise SearchArgumentsError("arguments: not a JSON object") from exc
    if not isinstance(arguments, Mapping):
        raise SearchArgumentsError("arguments: must be an object")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise SearchArgumentsError("query: must be a non-empty string")
    limit = arguments.get("max_results", DEFAULT_MAX_RESULTS)
    if limit is None:
        limit = DEFAULT_MAX_RESULTS
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise SearchArgumentsError("max_results: must be a whole number")
    if not 1 <= limit <= MAX_RESULTS_LIMIT:
        raise SearchArgumentsError(f"max_results: must be 1..{MAX_RESULTS_LIMIT}")
    return query, limit


# Anthropic -------------------------------------------------------------------------


def anthropic_search_tool() -> dict[str, Any]:
    """The non-deferred client tool the model calls to search."""
    return {
        "name": SEARCH_TOOL_NAME,
        "description": SEARCH_DESCRIPTION,
        "input_schema": search_parameters(),
    }


def anthropic_tools_list(definitions: Iterable[Mapping[str, Any]]) -> list[Any]:
    """Quiver's Anthropic definitions, each deferred, then the search tool.

    A catalog tool that happens to be called ``search_tools`` is left out: the
    names in ``tools`` must be unique and the search tool must not be deferred.
    """
    deferred = [
        {**definition, "defer_loading": True}
        for definition in definitions
        if definition.get("name") != SEARCH_TOOL_NAME
    ]
    return [*deferred, anthropic_search_tool()]


def anthropic_result(
    tool_use_id: str, names: Iterable[str], offered: set[str] | frozenset[str]
) -> dict[str, Any]:
    """A ``tool_result`` of ``tool_reference`` blocks, only for names in ``offered``
    (the API refuses a reference to a tool that is not in ``tools``)."""
    seen: set[str] = set()
    refs: list[dict[str, Any]] = []
    for name in names:
        if name in offered and name not in seen and name != SEARCH_TOOL_NAME:
            seen.add(name)
            refs.append({"type": "tool_reference", "tool_name": name})
    if not refs:
        return anthropic_text_result(tool_use_id, "No tool matched this search.")
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": refs}


def anthropic_text_result(
    tool_use_id: str, text: str, *, is_error: bool = False
) -> dict[str, Any]:
    """A plain text ``tool_result`` (no match, or a search the model must fix)."""
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [{"type": "text", "text": text}],
    }
    if is_error:
        result["is_error"] = True
    return result


# OpenAI ----------------------------------------------------------------------------


def openai_tool_search_declaration(
    description: str = SEARCH_DESCRIPTION,
) -> dict[str, Any]:
    """The Responses API ``tool_search`` tool, executed by the client."""
    return {
        "type": "tool_search",
        "execution": "client",
        "description": description,
        "parameters": search_parameters(),
    }


def openai_function(definition: Mapping[str, Any]) -> dict[str, Any]:
    """A Responses function definition as the API takes it: ``strict`` is set
    (false unless the catalog says otherwise, since a verbatim schema need not
    meet strict mode's rules)."""
    function = dict(definition)
    if function.get("strict") is None:
        function["strict"] = False
    return function


def openai_output(
    call_id: str, definitions: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """The ``tool_search_output`` item that answers a ``tool_search_call``."""
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": [openai_function(d) for d in definitions],
    }
