"""The test upstream MCP server (tests/upstream.py's tools) over stdio, as a
command a stdio source runs: ``sys.executable tests/stdio_upstream.py``.

Its environment is the test's window into it: every call is appended as one JSON
line to the file named by ``STDIO_UPSTREAM_LOG`` together with the value of
``STDIO_UPSTREAM_TOKEN`` it was started with (so a test can see that the
settings file's env reached the command)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402

from tests.upstream import Upstream  # noqa: E402


class LoggedUpstream(Upstream):
    async def on_list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """With ``STDIO_UPSTREAM_LIST_BYTES``, one more tool whose description
        is that many bytes (a listing too large to read whole)."""
        listed = await super().on_list_tools(ctx, params)
        size = int(os.environ.get("STDIO_UPSTREAM_LIST_BYTES") or 0)
        if size:
            huge = types.Tool(
                name="huge", description="x" * size, input_schema={"type": "object"}
            )
            listed.tools.append(huge)
        return listed

    async def on_call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        log = os.environ.get("STDIO_UPSTREAM_LOG")
        if log:
            line = {
                "name": params.name,
                "arguments": dict(params.arguments or {}),
                "token": os.environ.get("STDIO_UPSTREAM_TOKEN"),
                "pid": os.getpid(),
            }
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        return await super().on_call_tool(ctx, params)


async def main() -> None:
    upstream = LoggedUpstream()
    server: Server[Any] = Server(
        "test-stdio-upstream",
        version="1",
        on_list_tools=upstream.on_list_tools,
        on_call_tool=upstream.on_call_tool,
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(
            read_stream, write_stream, server.create_initialization_options()
        )


if __name__ == "__main__":
    anyio.run(main)
