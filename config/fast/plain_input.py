"""Reading a plainly valid body without DRF's field machinery, by the rules its
serializer declares (``selection.api.input`` for /select, ``calls.input`` for a
call).

DRF builds and runs a field object per declared field on every body. A hot
endpoint first looks at the body as it is: ``plain_checks`` makes, once, a check
per declared field from the field itself (its type, bounds, length, pattern and
the characters it refuses); ``read_plainly`` returns exactly the serializer's
validated data when every value already passes its check, else None, and
``validated`` then hands the body to the serializer, which accepts it or refuses it
naming the field, in its own words. The plain path never refuses anything: there
is one set of rules and one set of messages."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from rest_framework import fields as f
from rest_framework import serializers

from config.jsonparse import has_bad_text

DEFER = object()  # this value is for the serializer to judge
Check = Callable[[Any], Any]
Checks = dict[str, tuple[Check, Any, bool]]


def validated(
    data: Any,
    plain: Callable[[Any], dict[str, Any] | None],
    serializer_class: type[serializers.Serializer],
) -> dict[str, Any]:
    """``plain(data)`` when it reads the body, else the serializer's validated
    data, or ``ValidationError`` with its field errors (as
    ``is_valid(raise_exception=True)`` raises them)."""
    found = plain(data)
    if found is not None:
        return found
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def plain_checks(
    serializer: serializers.Serializer, overrides: Mapping[str, Check] | None = None
) -> Checks:
    """Each declared field's plain check (``overrides`` for the fields named
    there), default (``empty``: none) and whether it is required."""
    overrides = overrides or {}
    return {
        name: (overrides.get(name) or check_for(field), field.default, field.required)
        for name, field in serializer.fields.items()
        if not field.read_only
    }


def read_plainly(data: Any, checks: Checks) -> dict[str, Any] | None:
    """The values of ``data`` as the serializer keeps them, defaults filled in
    (a callable default called, as DRF does), or None when a value is not plain
    or a required field is missing."""
    if type(data) is not dict or not data.keys() <= checks.keys():
        return None
    valid: dict[str, Any] = {}
    for name, (check, default, required) in checks.items():
        if name in data:
            value = check(data[name])
            if value is DEFER:
                return None
            valid[name] = value
        elif default is not f.empty:
            valid[name] = default() if callable(default) else default
        elif required:
            return None
    return valid


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
    item = check_for(field.child)
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


def check_for(field: f.Field) -> Check:
    unread = {type(v).__name__ for v in field.validators} - _READ_VALIDATORS
    if unread:
        raise TypeError(f"{field!r}: {sorted(unread)} are not read plainly")
    for kind, make in _KINDS:
        if isinstance(field, kind):
            return make(field)
    raise TypeError(f"{field!r}: no plain check for this kind of field")
