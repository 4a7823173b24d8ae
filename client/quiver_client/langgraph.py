"""Quiver's selection as the tool retrieval of a langgraph-bigtool agent.

A bigtool agent starts with one tool, ``retrieve_tools(query)``, whose answer decides
which tools of its registry are bound to the model next. Here the answer is Quiver's
selection and the registry is the catalog's tools as this key may see them, each run
through Quiver (access, arguments, approval, audit). ``retrieve_tools`` and
``aretrieve_tools`` need nothing but this package; ``tool_registry`` imports
``langchain_core`` only when called. How to wire it:
docs/tutorials/connect-frameworks.md.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from quiver_client.aio import AsyncQuiver
from quiver_client.client import Quiver
from quiver_client.errors import APIError, NeedsAuthorization, PendingApproval
from quiver_client.types import Selection, ToolCallResult
from quiver_client.wire import DEFAULT_CATALOG

# Quiver's refusal of an approval no person has decided yet: the call keeps it.
WAITING = "still waiting for a person"
# StructuredTool.from_function takes the tool's description from the docstring.
RETRIEVE_DOC = (
    "Retrieve tools to use, given a search query: say what the next step must "
    "do. Answers the names of the tools now available."
)


def retrieve_tools(
    quiver: Quiver,
    *,
    catalog: str | None = None,
    limit: int = 3,
    offered: dict[str, str] | None = None,
    **options: Any,
) -> Callable[[str], list[str]]:
    """bigtool's ``retrieve_tools_function``: ``POST /select`` of the query, at
    most ``limit`` tools, answered as their catalog names (the registry's ids).
    Each name goes into ``offered`` with the selection that offered it, so a
    ``tool_registry`` sharing the dict links each call to its selection.
    ``options`` go to ``select`` (``roles``, ``categories``...)."""

    def retrieve_tools(query: str) -> list[str]:
        answer = quiver.select(query, catalog=catalog, max_candidates=limit, **options)
        return _offered(answer, offered)

    retrieve_tools.__doc__ = RETRIEVE_DOC
    return retrieve_tools


def aretrieve_tools(
    quiver: AsyncQuiver,
    *,
    catalog: str | None = None,
    limit: int = 3,
    offered: dict[str, str] | None = None,
    **options: Any,
) -> Callable[[str], Awaitable[list[str]]]:
    """``retrieve_tools`` for an ``AsyncQuiver``: bigtool's
    ``retrieve_tools_coroutine``."""

    async def retrieve_tools(query: str) -> list[str]:
        answer = await quiver.select(
            query, catalog=catalog, max_candidates=limit, **options
        )
        return _offered(answer, offered)

    retrieve_tools.__doc__ = RETRIEVE_DOC
    return retrieve_tools


def _offered(answer: Selection, offered: dict[str, str] | None) -> list[str]:
    names = [pick["name"] for pick in answer["tools"]]
    if offered is not None:
        offered.update(dict.fromkeys(names, answer["selection_id"]))
    return names


def tool_registry(
    quiver: Quiver,
    *,
    catalog: str | None = None,
    offered: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """bigtool's ``tool_registry``: every active tool of ``catalog`` this key may
    read (``GET catalogs/<slug>/export``), as a LangChain ``StructuredTool`` keyed
    by its catalog name. The model sees its provider name (``^[a-zA-Z0-9_-]{1,64}$``,
    unique in the catalog: what ``select`` offers providers); a call runs
    through ``Quiver.call`` (with the selection ``offered`` names for it). A
    pending approval is a result saying so, and the same call with the same
    arguments, once a person approved it, carries the approval; a refusal or a
    failed call is a tool error naming why."""
    from langchain_core.tools import StructuredTool

    slug = catalog or DEFAULT_CATALOG
    path = f"catalogs/{slug}/export"
    params = {"format": "canonical", "status": "active"}
    document = quiver.request("GET", path, params=params)
    registry: dict[str, Any] = {}
    for tool in document["tools"]:
        calls = _Calls(quiver, slug, tool["name"], offered)
        registry[tool["name"]] = StructuredTool.from_function(
            func=calls.run,  # a method: LangGraph's ToolNode reads its type hints
            name=tool.get("provider_name") or tool["name"],
            description=tool.get("description") or tool["name"],
            args_schema=tool.get("parameters") or {"type": "object"},
            handle_tool_error=True,
        )
    return registry


class _Calls:
    """One catalog tool's calls through Quiver, remembering the approval a
    pending call was given so the same call again carries it (until it ran, or
    was denied, used or expired: then the next call asks anew)."""

    def __init__(
        self,
        quiver: Quiver,
        catalog: str,
        name: str,
        offered: Mapping[str, str] | None,
    ) -> None:
        self.quiver, self.catalog, self.name = quiver, catalog, name
        self.offered = offered if offered is not None else {}
        self.approvals: dict[str, str] = {}

    def run(self, **arguments: Any) -> str:
        from langchain_core.tools import ToolException

        key = json.dumps(arguments, sort_keys=True, default=str)
        try:
            result = self.quiver.call(
                self.name,
                arguments,
                catalog=self.catalog,
                selection_id=self.offered.get(self.name),
                approval_id=self.approvals.get(key),
            )
        except PendingApproval as pending:
            self.approvals[key] = pending.approval_id
            return (
                f"pending_approval {pending.approval_id}: nothing ran; a person "
                "must approve this call, then make the same call again"
            )
        except NeedsAuthorization as needs:
            where = needs.authorization_url
            return f"needs_authorization: nothing ran; {needs.detail}" + (
                f"; the user connects their account at {where}" if where else ""
            )
        except APIError as exc:
            if "approval_id" in exc.fields and WAITING not in exc.detail:
                self.approvals.pop(key, None)  # denied, used or expired: ask anew
            raise ToolException(f"refused: {exc.detail}") from exc
        self.approvals.pop(key, None)
        text = _text(result)
        if result["is_error"] or result["outcome"] != "ran":
            raise ToolException(f"{result['outcome']}: {text or result['reason']}")
        return text


def _text(result: ToolCallResult) -> str:
    """The result's text blocks, else its structured content as JSON."""
    texts = [
        str(block["text"])
        for block in result["content"]
        if block.get("type") == "text" and "text" in block
    ]
    if texts:
        return "\n".join(texts)
    if result["structured_content"] is not None:
        return json.dumps(result["structured_content"])
    return ""
