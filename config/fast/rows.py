"""Reads on the hot path whose SQL is made once per process, read back into model
instances as the ORM would build them.

Building a query through Django's compiler costs more CPU than the database spends
answering it (bench/README.md, "Fast paths"). A reader keeps its statement's text,
made from the models' metadata (``Columns``, ``column``) the first time it is
used, and ``Columns.instance`` turns each row into an instance with
``Model.from_db`` after the fields' own database converters (JSON is decoded by
``JSONField``, as the ORM does). It runs on Django's connection, so
transactions, error translation (``OperationalError`` is a 503), query counting and
the connection's health checks are those of any other query.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Field, Model

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class Columns:
    """The concrete columns of ``model`` (``only`` these fields, else all) under
    the table alias ``alias``; an instance read with ``only`` defers the rest."""

    model: type[Model]
    alias: str
    only: tuple[str, ...] = ()

    @functools.cached_property
    def fields(self) -> tuple[Field[Any, Any], ...]:
        every = self.model._meta.concrete_fields
        if not self.only:
            return tuple(every)  # type: ignore[arg-type]
        return tuple(f for f in every if f.name in self.only)  # type: ignore[misc]

    @functools.cached_property
    def _converters(self) -> tuple[tuple[int, Any, tuple[Converter, ...]], ...]:
        found = []
        for index, field in enumerate(self.fields):
            column = field.get_col(self.alias)
            converters = tuple(
                connection.ops.get_db_converters(column)
                + column.get_db_converters(connection)
            )
            if converters:
                found.append((index, column, converters))
        return tuple(found)

    def sql(self) -> str:
        quote = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{quote(str(f.column))}" for f in self.fields)

    def width(self) -> int:
        return len(self.fields)

    def instance(self, values: Sequence[Any]) -> Model:
        """The model instance of this row's slice, as a queryset would make it."""
        row = list(values)
        for index, column, converters in self._converters:
            for convert in converters:
                row[index] = convert(row[index], column, connection)
        names = [field.attname for field in self.fields]
        return self.model.from_db(DEFAULT_DB_ALIAS, names, row)


def column(model: type[Model], name: str) -> str:
    """The quoted column of ``model``'s concrete field ``name`` (a foreign key's
    ``_id`` column), for a statement's text."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} is not a column")
    return str(connection.ops.quote_name(str(field.column)))


def fetch_one(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """The first row of ``sql`` on Django's connection (None when there is none)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return tuple(row) if row is not None else None


def fetch_all(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]


def split(row: Sequence[Any], parts: Sequence[Columns]) -> list[Sequence[Any]]:
    """``row`` cut into the slices of ``parts``, in order (extra columns after)."""
    slices, start = [], 0
    for part in parts:
        slices.append(row[start : start + part.width()])
        start += part.width()
    slices.append(row[start:])
    return slices
