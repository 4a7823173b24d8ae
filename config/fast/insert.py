"""A new row's INSERT made once per process, its values as ``save`` stores them.

Django's INSERT compiler costs more CPU than the statement it makes
(bench/README.md, "Fast paths"). ``insert`` writes an unsaved instance on Django's
connection (in the caller's transaction, if any) with the statement's text made
the first time a model is written, each value what ``save`` would store
(``copy_rows.column_value``: ``pre_save`` then ``get_db_prep_save``, JSON as its
field's encoder writes it), and sets the instance's primary key from ``RETURNING``.
``dollar_insert`` is the same statement with libpq's ``$n`` parameters, for a
connection of its own (``beside``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.db import connection
from django.db.models import Model

from config.fast.copy_rows import column_value

Values = tuple[Callable[[Model], Any], ...]


@functools.cache
def _head(model: type[Model]) -> tuple[str, int, Values]:
    """``INSERT INTO <table> (<columns>)`` of a new row, how many columns, and
    what each stores for an instance."""
    meta = model._meta
    fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(f.column)) for f in fields)
    head = f"INSERT INTO {quote(meta.db_table)} ({columns})"
    return head, len(fields), tuple(column_value(f, connection) for f in fields)


@functools.cache
def dollar_insert(model: type[Model]) -> tuple[bytes, Values]:
    """The row's INSERT with a parameter per column (libpq's ``$n``)."""
    head, count, values = _head(model)
    marks = ", ".join(f"${n}" for n in range(1, count + 1))
    return f"{head} VALUES ({marks})".encode(), values


@functools.cache
def _returning(model: type[Model]) -> tuple[str, str, Values]:
    """The row's INSERT on Django's connection (``%s`` parameters), giving back
    its id, and the primary key's attribute name."""
    head, count, values = _head(model)
    pk = model._meta.pk
    assert pk is not None
    quote = connection.ops.quote_name
    marks = ", ".join(["%s"] * count)
    sql = f"{head} VALUES ({marks}) RETURNING {quote(str(pk.column))}"
    return sql, pk.attname, values


def insert(obj: Model) -> Model:
    """``obj.save()`` of a new instance; its primary key set."""
    sql, attname, values = _returning(type(obj))
    with connection.cursor() as cursor:
        cursor.execute(sql, [value(obj) for value in values])
        row = cursor.fetchone()
    assert row is not None
    setattr(obj, attname, row[0])
    obj._state.adding = False
    obj._state.db = connection.alias
    return obj
