"""Catalog sources: MCP servers whose tools a catalog syncs.

From the issue "Quiver in the call path"."""
