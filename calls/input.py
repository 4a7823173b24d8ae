"""A call's input (POST /tool-calls/execute, MCP ``call_tool`` and a tool called
by its own name): ``CallInputSerializer``'s rules, and ``call_input``, which reads
a plain body without DRF's field machinery (as ``selection.api.input`` does for
/select; DRF built and ran a field object per field on every call).

``call_input`` first looks at the body as it is: a name that is already a clean
string within the field's bounds, arguments that are an object within the stored
size, a catalog that is already a slug, and no selection or approval id (those
are for the serializer's UUID field to read): it returns exactly the
serializer's validated data. Anything else goes to the serializer, which accepts
it or refuses it naming the field, in its own words; the plain path never
refuses anything. ``tests/calls/test_call_input.py`` holds both paths to the same
answer."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers
from rest_framework.fields import CharField
from rest_framework.utils import json as drf_json

from catalog.api.serializers import check_stored_size
from catalog.sizes import size_problem
from config.strict import StrictFieldsMixin


class CallInputSerializer(StrictFieldsMixin, serializers.Serializer):
    """One call: the tool's name (as offered), its arguments, and optionally the
    catalog, the selection that offered it and the approval that covers it."""

    name = serializers.CharField(max_length=200)
    arguments = serializers.JSONField(default=dict)
    catalog = serializers.SlugField(required=False)
    selection_id = serializers.UUIDField(required=False, allow_null=True)
    approval_id = serializers.UUIDField(required=False, allow_null=True)

    def validate_arguments(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise serializers.ValidationError("arguments: must be a JSON object")
        check_stored_size("arguments", value)
        return value


FIELDS = frozenset(CallInputSerializer().fields)
_NAME = CallInputSerializer().fields["name"]
NAME_CHARS: int | None = _NAME.max_length if isinstance(_NAME, CharField) else None
SLUG = re.compile(r"[-a-zA-Z0-9_]+\Z")
# What DRF's CharField refuses in any text: NUL, and any surrogate code point.
REFUSED_CHARS = re.compile("[\x00\ud800-\udfff]")


def call_input(data: Any) -> dict[str, Any]:
    """The validated call input, or ``ValidationError`` with the serializer's
    field errors (as ``is_valid(raise_exception=True)`` raises them)."""
    plain = _plain(data)
    if plain is not None:
        return plain
    serializer = CallInputSerializer(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _plain(data: Any) -> dict[str, Any] | None:
    """The validated data of a body that is plainly valid, else None."""
    if type(data) is not dict or not data.keys() <= FIELDS:
        return None
    if data.get("selection_id") is not None or data.get("approval_id") is not None:
        return None
    name, arguments = data.get("name"), data.get("arguments", {})
    if not _clean_text(name, NAME_CHARS) or type(arguments) is not dict:
        return None
    if not _json_as_drf_reads_it(arguments) or size_problem("arguments", arguments):
        return None
    valid: dict[str, Any] = {"name": name, "arguments": arguments}
    if "catalog" in data:
        catalog = data["catalog"]
        if type(catalog) is not str or not SLUG.match(catalog):
            return None
        valid["catalog"] = catalog
    for key in ("selection_id", "approval_id"):
        if key in data:
            valid[key] = None
    return valid


def _json_as_drf_reads_it(value: Any) -> bool:
    """DRF's JSONField check: JSON as the spec has it (no NaN, no Infinity)."""
    try:
        drf_json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _clean_text(value: Any, limit: int | None) -> bool:
    """A string DRF's CharField keeps as it is: not blank, not padded (it would
    strip it), within ``limit``, without a character it refuses."""
    return (
        type(value) is str
        and 0 < len(value) <= (limit or len(value))
        and value == value.strip()
        and REFUSED_CHARS.search(value) is None
    )
