"""Many new rows of one model in one ``COPY`` (a bulk import's tools, their change
records and their audit events).

Django's ``bulk_create`` sends each column as an array parameter whose every element
psycopg quotes with a regular expression, a large share of a bulk import
(bench/README.md, "Fast paths"); ``COPY`` streams the same values, each adapted
once. Each value is what ``bulk_create`` would store (``pre_save``, then
``get_db_prep_save``; JSON columns as their JSON text), and a refused row raises
``IntegrityError`` with nothing of the COPY kept in the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections
from django.db.models import JSONField, Model

# Field types whose values of exactly this Python type are stored as they are.
_PLAIN_TYPES: dict[str, type] = {
    "CharField": str,
    "TextField": str,
    "SlugField": str,
    "BooleanField": bool,
    "IntegerField": int,
    "BigIntegerField": int,
    "PositiveIntegerField": int,
    "PositiveBigIntegerField": int,
    "PositiveSmallIntegerField": int,
    "SmallIntegerField": int,
    "ForeignKey": int,
}


def copy_insert(
    objs: Sequence[Model], *, with_ids: bool = False, using: str = "default"
) -> None:
    """Insert the (unsaved) instances of one model; ``with_ids`` gives each its
    primary key first (taken from the table's sequence, ascending in order)."""
    if not objs:
        return
    meta = type(objs[0])._meta
    connection = connections[using]
    fields: list[Any] = [
        f for f in meta.concrete_fields if with_ids or not f.primary_key
    ]
    if with_ids:
        pk_column = str(meta.pk.column if meta.pk else "id")
        ids = _next_ids(connection, meta.db_table, pk_column, len(objs))
        for obj, new_id in zip(objs, ids, strict=True):
            obj.pk = new_id
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(field.column)) for field in fields)
    sql = f"COPY {quote(meta.db_table)} ({columns}) FROM STDIN"
    values = [column_value(field, connection) for field in fields]
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.copy(sql) as copy,
    ):
        for obj in objs:
            copy.write_row([value(obj) for value in values])
    for obj in objs:
        obj._state.adding = False
        obj._state.db = using


def column_value(field: Any, connection: Any) -> Callable[[Model], Any]:
    """What one column stores for an instance (see the module's docstring)."""
    if isinstance(field, JSONField):
        encoder = field.encoder

        def as_json(obj: Model) -> str | None:
            value = field.pre_save(obj, True)
            return None if value is None else json.dumps(value, cls=encoder)

        return as_json
    plain = _PLAIN_TYPES.get(field.get_internal_type())

    def prepared(obj: Model) -> Any:
        value = field.pre_save(obj, True)
        if value is None or type(value) is plain:
            return value  # what get_db_prep_save would give back, unchanged
        return field.get_db_prep_save(value, connection)

    return prepared


def _next_ids(connection: Any, table: str, column: str, count: int) -> list[int]:
    """``count`` values of the table's id sequence, ascending."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) "
            "FROM generate_series(1, %s)",
            [table, column, count],
        )
        return sorted(row[0] for row in cursor.fetchall())
