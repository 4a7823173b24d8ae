"""``tools/list``: the three tools, and a page of found tools reached only by the
cursor a ``search_tools`` answer gives.

Listing every tool would put the whole catalog in front of the model, yet the SDK
clients want a tool listed before they check its call's result: each search's
``list_cursor`` lists exactly the tools found, as the key may see them now. The
cursor carries the catalog and the names, nothing secret.
Why: docs/how-to/development.md, How /mcp is served.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from django.db import close_old_connections
from django.http import Http404

from audit.actors import Caller
from catalog.formats import export_tool
from catalog.lookups import get_catalog_for_user
from catalog.names import Ambiguous
from catalog.services.tools import tool_to_spec
from config import jsonparse
from identity.access import access_for
from selection.services.validate import find_tool

PREFIX = "found."
MAX_NAMES = 50
MAX_CURSOR = 16_384


class BadCursor(ValueError):
    """A cursor this server never gave (a JSON-RPC invalid-params error)."""


def cursor_for(catalog: str, names: list[str]) -> str:
    """The cursor whose ``tools/list`` page lists ``names`` of ``catalog``."""
    found = json.dumps({"catalog": catalog, "names": names[:MAX_NAMES]})
    return PREFIX + base64.urlsafe_b64encode(found.encode()).decode().rstrip("=")


def found_page(user: Caller, cursor: str, to_mcp: Any) -> list[dict[str, Any]]:
    """The tools a cursor names that the caller may see, as MCP Tool objects
    (``to_mcp`` shapes each one, as search_tools does); one the caller may not
    see, or that is gone, is left out, exactly as a name never found."""
    catalog_slug, names = _read(cursor)
    close_old_connections()
    try:
        try:
            catalog = get_catalog_for_user(user, catalog_slug)
        except Http404:
            return []
        access = access_for(user)
        tools = (_found(catalog, name, access) for name in dict.fromkeys(names))
        return [to_mcp(export_tool(tool_to_spec(t), "mcp")) for t in tools if t]
    finally:
        close_old_connections()


def _found(catalog: Any, name: str, access: Any) -> Any:
    """The tool ``name`` calls, or None: one several tools held before the
    one-name rule is left out (a call by it is refused, naming that)."""
    try:
        return find_tool(catalog, name, access)
    except Ambiguous:
        return None


def _read(cursor: str) -> tuple[str, list[str]]:
    if not cursor.startswith(PREFIX) or len(cursor) > MAX_CURSOR:
        raise BadCursor("cursor: not one this server gave")
    body = cursor.removeprefix(PREFIX)
    try:
        decoded = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        found = jsonparse.loads(decoded, max_depth=2)  # the API's JSON rules
    except (binascii.Error, ValueError) as exc:
        raise BadCursor("cursor: not one this server gave") from exc
    catalog, names = (
        (found.get("catalog"), found.get("names"))
        if isinstance(found, dict)
        else (None, None)
    )
    if (
        not isinstance(catalog, str)
        or not isinstance(names, list)
        or len(names) > MAX_NAMES
        or not all(isinstance(name, str) and 0 < len(name) <= 200 for name in names)
        # Postgres text holds no NUL, UTF-8 no lone surrogate: never queried.
        or any(jsonparse.has_bad_text(text) for text in (catalog, *names))
    ):
        raise BadCursor("cursor: not one this server gave")
    return catalog, names
