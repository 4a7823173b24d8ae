"""/select's input (REST, batch items, MCP ``search_tools``) under the rules that
``SelectInputSerializer`` declares, without DRF's field machinery for a plain body.

DRF builds and runs a field object per declared field on every body: ~7% of a
cached answer's web CPU under load (bench/README.md, "Selections with no framework
tax"). ``select_input`` first looks at the body as it is: when every value already
has the declared type, lies within the declared bounds and breaks none of the
serializer's own rules, it returns exactly the serializer's validated data
(defaults filled in, numbers as their field makes them). Any other body (a missing
or unknown field, a string for a number, anything out of range) goes to the
serializer, which accepts it or refuses it naming the field, in its own words.
The plain path never refuses anything, and it reads every bound from the
serializer's fields: there is one set of rules and one set of messages.
``tests/selection/test_select_input.py`` holds both paths to the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rest_framework import fields as f
from rest_framework.serializers import ValidationError

from config.jsonparse import has_bad_text
from selection.api.serializers import (
    SelectInputSerializer,
    messages_problem,
    query_or_messages_problem,
    query_problem,
)

DEFER = object()  # this value is for the serializer to judge
Check = Callable[[Any], Any]


def select_input(data: Any) -> dict[str, Any]:
    """The validated /select input, or ``ValidationError`` with the serializer's
    field errors (as ``is_valid(raise_exception=True)`` raises them)."""
    plain = _plain(data)
    if plain is not None:
        return plain
    serializer = SelectInputSerializer(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _plain(data: Any) -> dict[str, Any] | None:
    """The validated data of a body that is plainly valid, else None."""
    if type(data) is not dict or not data.keys() <= _CHECKS.keys():
        return None
    valid: dict[str, Any] = {}
    for name, (check, default) in _CHECKS.items():
        if name in data:
            value = check(data[name])
            if value is DEFER:
                return None
            valid[name] = value
        elif default is not f.empty:
            valid[name] = default
    hooks: tuple[str, ...] = (query_or_messages_problem(valid),)
    if "query" in valid:
        hooks += (query_problem(valid["query"]),)
    if "messages" in valid:
        hooks += (messages_problem(valid["messages"]),)
    return None if any(hooks) else valid


def _integer(field: f.IntegerField) -> Check:
    low, high = field.min_value, field.max_value

    def check(value: Any) -> Any:
        if type(value) is not int or not _within(value, low, high):
            return DEFER
        return value

    return check


def _float(field: f.FloatField) -> Check:
    low, high = field.min_value, field.max_value

    def check(value: Any) -> Any:
        if type(value) not in (int, float) or not _within(value, low, high):
            return DEFER
        try:
            number = float(value)
        except OverflowError:
            return DEFER
        return number if math.isfinite(number) else DEFER

    return check


def _within(value: float, low: float | None, high: float | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _boolean(field: f.BooleanField) -> Check:
    return lambda value: value if type(value) is bool else DEFER


def _choice(field: f.ChoiceField) -> Check:
    choices = field.choice_strings_to_values
    return lambda value: (
        choices[value] if type(value) is str and value in choices else DEFER
    )


def _text(field: f.CharField) -> Check:
    """A string the field takes as it is: not blank, no spaces to trim, within its
    length, no unstorable character; a slug also matches the field's pattern."""
    longest = field.max_length
    patterns = [getattr(v, "regex", None) for v in field.validators]
    regex = next((p for p in patterns if p is not None), None)

    def check(value: Any) -> Any:
        if (
            type(value) is not str
            or not value
            or value != value.strip()
            or (longest is not None and len(value) > longest)
            or (regex is not None and not regex.search(value))
            or has_bad_text(value)
        ):
            return DEFER
        return value

    return check


def _list(field: f.ListField) -> Check:
    item = _check_for(field.child)
    longest, shortest = field.max_length, field.min_length

    def check(value: Any) -> Any:
        if type(value) is not list or not _within(len(value), shortest, longest):
            return DEFER
        if not value and not field.allow_empty:
            return DEFER
        items = [item(one) for one in value]
        return DEFER if any(one is DEFER for one in items) else items

    return check


def _dict(field: f.DictField) -> Check:
    """A JSON object, copied as the field copies it (its values unvalidated)."""
    if not isinstance(field.child, f._UnvalidatedField):
        raise TypeError(f"{field}: only a DictField of any values is read plainly")
    return lambda value: dict(value) if type(value) is dict and value else DEFER


def _json(field: f.JSONField) -> Check:
    """A string (the serializer's hook judges the rest); an object goes to the
    field itself, which must encode it to know it is JSON."""
    return lambda value: value if type(value) is str else DEFER


# Most specific classes first: a SlugField is a CharField.
_KINDS: tuple[tuple[type[f.Field], Callable[[Any], Check]], ...] = (
    (f.BooleanField, _boolean),
    (f.IntegerField, _integer),
    (f.FloatField, _float),
    (f.ChoiceField, _choice),
    (f.CharField, _text),
    (f.ListField, _list),
    (f.DictField, _dict),
    (f.JSONField, _json),
)


# The validators DRF adds for the arguments the checks above read (bounds, lengths,
# a slug's pattern, unstorable characters); any other makes the import fail.
_READ_VALIDATORS = frozenset(
    {
        "MinValueValidator",
        "MaxValueValidator",
        "MinLengthValidator",
        "MaxLengthValidator",
        "RegexValidator",
        "ProhibitNullCharactersValidator",
        "ProhibitSurrogateCharactersValidator",
    }
)


def _check_for(field: f.Field) -> Check:
    unread = {type(v).__name__ for v in field.validators} - _READ_VALIDATORS
    if unread:
        raise TypeError(f"{field!r}: {sorted(unread)} are not read plainly")
    for kind, make in _KINDS:
        if isinstance(field, kind):
            return make(field)
    raise TypeError(f"{field!r}: no plain check for this kind of field")


def _checks() -> dict[str, tuple[Check, Any]]:
    """Each declared field's plain check and default (``empty``: none)."""
    declared = SelectInputSerializer().fields
    return {
        name: (_check_for(field), field.default)
        for name, field in declared.items()
        if not field.read_only
    }


_CHECKS = _checks()
__all__ = ["ValidationError", "select_input"]
