"""The demo MCP server behind ``make run``'s demo catalog: weather, email and files.

A stdio server on the official MCP SDK, with no network and nothing on disk (its
world is ``catalog.demo.world``). ``make run`` names it in the demo settings file
and ``add_demo_source`` puts it behind the demo catalog's tools of the same names,
so the tour's calls run: read-only ones and ``send_email`` at once, the destructive
``delete_file`` after a person's approval. Each tool's definition and hints are the
demo catalog's own (``demo_catalog.json``), so a sync of this server changes none.

    python -m catalog.demo.server        # speaks MCP on stdin and stdout
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from catalog.demo.world import World

DEMO_FILE = Path(__file__).resolve().parent / "demo_catalog.json"
NAME = "quiver-demo"
# The MCP hints of each tool the server serves (the demo catalog's entries say
# the same): nothing here reaches the network, so no tool is open-world.
HINTS: dict[str, dict[str, bool]] = {
    "get_current_weather": {"readOnlyHint": True, "openWorldHint": False},
    "get_weather_forecast": {"readOnlyHint": True, "openWorldHint": False},
    "search_emails": {"readOnlyHint": True, "openWorldHint": False},
    "list_files": {"readOnlyHint": True, "openWorldHint": False},
    "read_file": {"readOnlyHint": True, "openWorldHint": False},
    "send_email": {
        "readOnlyHint": False,
        "destructiveHint": False,
        "openWorldHint": False,
    },
    "delete_file": {
        "readOnlyHint": False,
        "destructiveHint": True,
        "openWorldHint": False,
    },
}


@cache
def listed_tools() -> tuple[types.Tool, ...]:
    """The server's tools, each from its entry in the demo catalog."""
    entries = {
        entry["name"]: entry
        for entry in json.loads(DEMO_FILE.read_text(encoding="utf-8"))["tools"]
    }
    return tuple(
        types.Tool(
            name=name,
            title=entries[name]["title"],
            description=entries[name]["description"],
            input_schema=entries[name]["parameters"],
            annotations=types.ToolAnnotations.model_validate(hints),
        )
        for name, hints in HINTS.items()
    )


def listing() -> dict[str, dict[str, Any]]:
    """Tool name -> the tool as a client reads it from ``tools/list`` (the JSON
    of the MCP spec): what a source's link records as last listed."""
    return {
        tool.name: tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        for tool in listed_tools()
    }


def build_server(world: World) -> Server[Any]:
    async def on_list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(listed_tools()))

    async def on_call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result, failed = world.answer(params.name, dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(result))],
            structured_content=result,
            is_error=failed,
        )

    return Server(
        NAME, version="1", on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )


async def serve() -> None:
    server = build_server(World())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(
            read_stream, write_stream, server.create_initialization_options()
        )


if __name__ == "__main__":
    anyio.run(serve)
