"""A call's input (POST /tool-calls/execute, MCP ``call_tool`` and a tool called
by its own name): ``CallInputSerializer``'s rules, and ``call_input``, which reads
a plain body without DRF's field machinery (``config.fast.plain_input``, as /select's
input is read; DRF built and ran a field object per field on every call).

``call_input`` first looks at the body as it is: a name and a catalog their own
fields keep as they are (checked by ``config.fast.plain_input`` from the fields),
arguments that are an object within the stored size, and no selection or
approval id (those are for the serializer's UUID field to read): it returns
exactly the serializer's validated data. Anything else goes to the serializer,
which accepts it or refuses it naming the field, in its own words; the plain
path never refuses anything. ``tests/fastpath/test_parity.py`` holds both paths
to the same answer."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.utils import json as drf_json

from catalog.api.serializers import check_stored_size
from catalog.sizes import size_problem
from config.fast.plain_input import DEFER, plain_checks, read_plainly, validated
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


def call_input(data: Any) -> dict[str, Any]:
    """The validated call input, or ``ValidationError`` with the serializer's
    field errors (as ``is_valid(raise_exception=True)`` raises them)."""
    return validated(data, _plain, CallInputSerializer)


def _plain(data: Any) -> dict[str, Any] | None:
    """The validated data of a body that is plainly valid, else None."""
    return read_plainly(data, _CHECKS)


def _arguments(value: Any) -> Any:
    """An object DRF's JSONField keeps as it is (JSON as the spec has it: no NaN,
    no Infinity) within the stored size; anything else is the serializer's."""
    if type(value) is not dict or size_problem("arguments", value):
        return DEFER
    try:
        drf_json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return DEFER
    return value


def _no_id(value: Any) -> Any:
    """A selection's or approval's id is the UUID field's to read; null is None."""
    return None if value is None else DEFER


_CHECKS = plain_checks(
    CallInputSerializer(),
    {"arguments": _arguments, "selection_id": _no_id, "approval_id": _no_id},
)
