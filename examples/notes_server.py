"""A small MCP server to put behind Quiver: notes kept in memory.

The tutorial "An MCP server behind Quiver, with approvals" (docs/tutorials/) adds it
as a source. Its three tools carry the MCP hints a sync maps to Quiver's flags:

- ``list_notes`` says it is read-only: safe, offered to any key, run without asking;
- ``add_note`` is neither read-only nor destructive: safe, run without asking;
- ``delete_note`` is destructive: unsafe and needs a person's approval per call.

Run it (official MCP SDK, streamable HTTP, stateless JSON answers):

    .venv/bin/python examples/notes_server.py            # http://127.0.0.1:9000/mcp
    .venv/bin/python examples/notes_server.py --port 9001
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

NOTES: dict[int, str] = {1: "Water the plants", 2: "Renew the TLS certificate"}

server = MCPServer("notes")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def list_notes() -> dict[str, str]:
    """List every note, by id."""
    return {str(number): text for number, text in sorted(NOTES.items())}


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def add_note(text: str) -> int:
    """Add a note; answers its id."""
    number = max(NOTES, default=0) + 1
    NOTES[number] = text
    return number


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_note(note_id: int) -> str:
    """Delete a note for good."""
    text = NOTES.pop(note_id, None)
    return f"deleted note {note_id}" if text is not None else f"no note {note_id}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    port = parser.parse_args().port
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=port,
        stateless_http=True,
        json_response=True,
    )


if __name__ == "__main__":
    main()
