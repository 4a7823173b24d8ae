"""The MCP server: two tools, ``search_tools`` and ``get_tool_details``, over
streamable HTTP (stateless, JSON answers), for the 2026-07-28 protocol and the
handshake-era clients alike (the SDK serves both).

The caller was authenticated before any MCP work (``gateway.wsgi``), which puts
it in the ASGI scope's state; the handlers run the Django work in a thread."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from gateway import services

CALLER = "quiver_caller"  # scope["state"] keys set by gateway.wsgi
REQUEST_ID = "quiver_request_id"

TOOLS = [
    types.Tool(
        name="search_tools",
        title="Search tools",
        description=(
            "Find the few tools that fit a task among all the tools this key may "
            "use. Give query (text) or messages (the chat). Answers the tools as "
            "MCP Tool objects, best first, each with score and reason."
        ),
        input_schema={
            "type": "object",
            "properties": services.SEARCH_ARGUMENTS,
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=False,  # each search is an audit record
            open_world_hint=False,
        ),
    ),
    types.Tool(
        name="get_tool_details",
        title="Get tool details",
        description=(
            "The full definitions (MCP Tool objects) of tools by name; names this "
            "key may not use are listed in not_found."
        ),
        input_schema={
            "type": "object",
            "properties": services.DETAILS_ARGUMENTS,
            "required": ["names"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    ),
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    """The same two tools for every key, in this order."""
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult:
    user, request_id = _caller(ctx)
    arguments = dict(params.arguments or {})
    try:
        if params.name == "search_tools":
            found = await anyio.to_thread.run_sync(
                services.search, user, arguments, request_id
            )
            text = _search_text(found)
        elif params.name == "get_tool_details":
            found = await anyio.to_thread.run_sync(services.details, user, arguments)
            text = json.dumps(found, indent=1)
        else:
            raise services.ToolFailure(f"name: no tool {params.name!r}")
    except services.ToolFailure as exc:
        return types.CallToolResult(
            content=[types.TextContent(text=str(exc))], is_error=True
        )
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=found
    )


def _caller(ctx: Any) -> tuple[Any, uuid.UUID]:
    """The authenticated caller; no caller here is a wiring fault, never a guest."""
    request = getattr(ctx, "request", None)
    state = request.scope.get("state", {}) if request is not None else {}
    if CALLER not in state:
        raise RuntimeError("MCP request without an authenticated caller")
    return state[CALLER], state[REQUEST_ID]


def _search_text(found: dict[str, Any]) -> str:
    lines = [f"selection {found['selection_id']} in catalog {found['catalog']}:"]
    for tool in found["tools"]:
        lines.append(f"- {tool['name']} ({tool['score']:.3f}): {tool['reason']}")
        lines.append(f"  {tool.get('description', '')}")
    if not found["tools"]:
        lines.append("(no tool fits; try other words)")
    return "\n".join(lines)


def build_manager() -> StreamableHTTPSessionManager:
    """A stateless, JSON-answering session manager. Host and Origin are checked
    before it (gateway.wsgi, against ALLOWED_HOSTS), so its own check is off."""
    server: Server[Any] = Server(
        "quiver", version="1", on_list_tools=list_tools, on_call_tool=call_tool
    )
    return StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=False
        ),
    )
