"""The demo catalog make run loads, and the demo MCP server behind its tools."""
