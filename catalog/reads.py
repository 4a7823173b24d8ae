"""The catalog's reads on every API request, their SQL made once per process
(config.fast.rows): a catalog by slug, a catalog's tools by name.

Each reads the current row on every call, as the queryset it replaces did: nothing
here is cached across requests, so a new catalog version counts from the very next
request."""

from __future__ import annotations

import functools

from django.db import connection

from catalog.models import Catalog, Tool
from catalog.spec import ToolSpec
from config.fast.rows import Columns, column, fetch_all, fetch_one


@functools.cache
def _catalog_read() -> tuple[str, Columns]:
    columns = Columns(Catalog, "c")
    quote = connection.ops.quote_name
    slug = quote(str(Catalog._meta.get_field("slug").column))
    table = quote(Catalog._meta.db_table)
    return f"SELECT {columns.sql()} FROM {table} c WHERE c.{slug} = %s", columns


def catalog_by_slug(slug: str) -> Catalog | None:
    """The catalog named ``slug`` (whoever asks: access is the caller's check)."""
    sql, columns = _catalog_read()
    row = fetch_one(sql, [slug])
    return columns.instance(row) if row is not None else None  # type: ignore[return-value]


@functools.cache
def _tools_read() -> tuple[str, Columns]:
    wanted = ("id", "version", "content_hash", *ToolSpec.field_names())
    columns = Columns(Tool, "t", only=wanted)
    quote = connection.ops.quote_name
    sql = (
        f"SELECT {columns.sql()} FROM {quote(Tool._meta.db_table)} t "
        f"WHERE t.{column(Tool, 'catalog')} = %s "
        f"AND t.{column(Tool, 'name')} = ANY(%s)"
    )
    return sql, columns


def tools_named(catalog: Catalog, names: list[str]) -> list[Tool]:
    """The catalog's tools of these names, with what their definitions, versions
    and hashes are made of (the rest of each row deferred)."""
    sql, columns = _tools_read()
    rows = fetch_all(sql, [catalog.pk, names])
    return [columns.instance(row) for row in rows]  # type: ignore[misc]
