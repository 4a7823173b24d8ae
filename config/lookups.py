"""``field__any=values``: the field equals one of ``values``, sent as one array
parameter (``= ANY(%s)``) instead of ``__in``'s one placeholder per value.

A caller limited to catalogs is filtered by the list of their slugs on every read
(``visible_to``); with ``__in`` each slug is its own placeholder, compiled and
bound on every query, so a key seeing hundreds of catalogs paid for each of them
on every call. One array parameter costs the same whatever its length, and
Postgres matches it against the same index. Registered on every field when this
module is imported (``config.apps``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.db.models import CharField, Field, Lookup, Q


class AnyOf(Lookup):  # type: ignore[type-arg]
    """``lhs = ANY(%s)`` with the values as one list (an empty one matches
    nothing, as ``__in=[]`` does)."""

    lookup_name = "any"
    prepare_rhs = False

    def get_prep_lookup(self) -> Any:
        values = list(getattr(self.rhs, "items", self.rhs))
        field = self.lhs.output_field
        if isinstance(field, CharField) and all(type(v) is str for v in values):
            return values  # what CharField.get_prep_value makes of each str
        return [field.get_prep_value(value) for value in values]

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        literal = plain_array(self.rhs)
        if literal is not None:
            return f"{lhs} = ANY(%s::text[])", (*lhs_params, literal)
        return f"{lhs} = ANY(%s)", (*lhs_params, list(self.rhs))


# Words an array literal holds as they are: no quote, comma, brace, backslash or
# space to escape, and never NULL (an unquoted NULL element is a null).
_PLAIN = re.compile(r"[A-Za-z0-9_-]+(?:,[A-Za-z0-9_-]+)*")
_NULL = re.compile(r"(?:^|,)null(?:,|$)", re.IGNORECASE)


def plain_array(values: list[Any]) -> str | None:
    """``values`` as one Postgres array literal when each is a plain word (a
    key's slugs), else None. One string is quoted once where a list is dumped
    value by value, which for a key of 500 catalogs cost more than the query;
    tests/fastpath/test_parity.py holds it to ``__in``'s rows."""
    if not values or not all(type(value) is str for value in values):
        return None
    joined = ",".join(values)
    if joined.count(",") != len(values) - 1:  # a value holds a comma
        return None
    if _PLAIN.fullmatch(joined) is None or _NULL.search(joined):
        return None
    return "{" + joined + "}"


class Values:
    """The values of one ``any_of``, as an object Django does not walk value by
    value when it resolves a filter (it does a list's or a tuple's, looking for
    expressions among hundreds of slugs; these are plain values)."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = list(items)


Field.register_lookup(AnyOf)


def any_of(path: str, values: Iterable[Any]) -> Q:
    """``path`` equal to one of ``values``, as one array parameter."""
    return Q(**{f"{path}__any": Values(values)})
