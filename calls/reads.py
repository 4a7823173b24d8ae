"""The rows a tool call is decided on, read in one statement whose SQL is made once
per process (``config.fast.rows``): the catalog, its selection settings' row and its
tools of the called name, with their source link, source and authorization.

As a queryset this cost two round trips and most of a call's CPU in Django's SQL
compiler (bench/README.md). Nothing is kept between calls, so any change counts from
the very next call. Who may see the catalog is decided before it is read
(``Access.may_see_catalog``); which tools the caller may see is the caller's to
decide (``catalog.querysets.tool_visible``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.http import Http404

from catalog.models import Catalog, Tool, ToolName
from catalog.names import ambiguous
from catalog.naming import look
from config.fast.rows import Columns, column, fetch_all, split
from identity.access import Access
from selection.models import SelectionSettings
from selection.querysets import StoredSettings
from sources.models import Source, SourceTool
from vault.models import SourceAuthorization


@dataclass(frozen=True)
class CallRows:
    """The catalog, its settings row, and the tool the name calls (none or one:
    ``catalog.names``) with ``source_link`` (and its ``source``) already set:
    None for a tool without a source. ``ambiguous``: several tools held the
    name before the one-name rule, one of them visible to the caller by that
    exact name (the call is refused, naming that)."""

    catalog: Catalog
    tools: list[Tool]
    settings: StoredSettings
    ambiguous: bool = False


@functools.cache
def _call_read() -> tuple[str, tuple[Columns, ...]]:
    parts = (
        Columns(Catalog, "c"),
        Columns(SelectionSettings, "e", only=("id", "data", "version")),
        Columns(ToolName, "n", only=("id", "tool")),
        Columns(Tool, "t"),
        Columns(SourceTool, "l"),
        Columns(Source, "s"),
        Columns(SourceAuthorization, "a"),
    )
    quote = connection.ops.quote_name

    def table(model: Any) -> str:
        return quote(model._meta.db_table)

    # Each part's first column is its primary key (a row without a tool or a
    # link has NULL there).
    assert all(part.fields[0].primary_key for part in parts)
    pk = quote("id")
    sql = (
        f"SELECT {', '.join(part.sql() for part in parts)} FROM {table(Catalog)} c "
        f"LEFT JOIN {table(SelectionSettings)} e "
        f"ON e.{column(SelectionSettings, 'catalog')} = c.{pk} "
        f"LEFT JOIN {table(ToolName)} n ON n.{column(ToolName, 'catalog')} = c.{pk} "
        f"AND n.{column(ToolName, 'look')} = %s "
        f"LEFT JOIN {table(Tool)} t ON t.{pk} = n.{column(ToolName, 'tool')} "
        f"AND (t.{column(Tool, 'name')} = %s "
        f"OR t.{column(Tool, 'provider_name')} = %s) "
        f"LEFT JOIN {table(SourceTool)} l ON l.{column(SourceTool, 'tool')} = t.{pk} "
        f"LEFT JOIN {table(Source)} s ON s.{pk} = l.{column(SourceTool, 'source')} "
        f"LEFT JOIN {table(SourceAuthorization)} a "
        f"ON a.{column(SourceAuthorization, 'source')} = s.{pk} "
        f"WHERE c.{column(Catalog, 'slug')} = %s ORDER BY t.{pk}"
    )
    return sql, parts


def read_call(access: Access, slug: str, name: str) -> CallRows:
    """The catalog ``slug`` and its tools called ``name``; 404 naming the catalog
    when the caller may not see it or there is none (one answer for both)."""
    if not access.may_see_catalog(slug):
        raise Http404(f"catalog: no catalog {slug!r}")
    sql, parts = _call_read()
    rows = fetch_all(sql, [look(name), name, name, slug])
    if not rows:
        raise Http404(f"catalog: no catalog {slug!r}")
    catalogs, stored, held, *joined = parts
    first = split(rows[0], parts)
    catalog: Any = catalogs.instance(first[0])
    found = [_tool(catalog, split(row, parts), *joined) for row in rows]
    known = [tool for tool in found if tool is not None]
    # A look held by no tool: several held it before the one-name rule.
    several = first[2][0] is not None and first[2][1] is None
    unclear = several and bool(ambiguous(catalog, [name], access))
    return CallRows(catalog, known, _settings(stored, first[1]), unclear)


def _settings(columns: Columns, row: Any) -> StoredSettings:
    """The settings' part of the row (NULLs: the catalog never changed them)."""
    if row[0] is None:
        return StoredSettings(None, 0)
    found: Any = columns.instance(row)
    return StoredSettings(found.data, found.version)


def _tool(
    catalog: Catalog,
    row: list[Any],
    tools: Columns,
    links: Columns,
    sources: Columns,
    authorizations: Columns,
) -> Tool | None:
    """The row's tool with its link, source and the source's authorization (or
    its absence) set as ``select_related`` sets them (so reading them costs no
    query), or None when the row has no tool."""
    _, _, _, tool_row, link_row, source_row, auth_row, _ = row
    if tool_row[0] is None:
        return None
    tool: Any = tools.instance(tool_row)
    Tool._meta.get_field("catalog").set_cached_value(tool, catalog)  # type: ignore[union-attr]
    link: Any = None
    if link_row[0] is not None:
        link = links.instance(link_row)
        source: Any = sources.instance(source_row)
        Source._meta.get_field("catalog").set_cached_value(source, catalog)  # type: ignore[union-attr]
        SourceTool._meta.get_field("source").set_cached_value(link, source)  # type: ignore[union-attr]
        SourceTool._meta.get_field("tool").set_cached_value(link, tool)  # type: ignore[union-attr]
        auth = authorizations.instance(auth_row) if auth_row[0] is not None else None
        Source._meta.get_field("authorization").set_cached_value(source, auth)  # type: ignore[union-attr]
    Tool._meta.get_field("source_link").set_cached_value(tool, link)  # type: ignore[union-attr]
    return tool
