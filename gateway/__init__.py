"""The MCP endpoint (``/mcp``): Quiver's selection as MCP tools for agents.

``gateway.services`` does the work with the selection and catalog services (never
their views); ``gateway.server`` is the MCP server (the official ``mcp`` SDK,
streamable HTTP, stateless, JSON answers); ``gateway.wsgi`` serves it from the same
gunicorn workers and port as the REST API, after the Host/Origin check and the
API key's authentication.
"""
