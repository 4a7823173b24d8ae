"""/select's input (REST, batch items, MCP ``search_tools``) under the rules that
``SelectInputSerializer`` declares, without DRF's field machinery for a plain body.

DRF runs a field object per declared field on every body (its cost: bench/README.md,
"Fast paths"). ``select_input`` returns the serializer's validated data itself when
every value already has the declared type and bounds; any other body goes to the
serializer, which accepts it or refuses it in its own words. The plain path never
refuses anything and reads every bound from the serializer: one set of rules and
messages. ``tests/fastpath/test_parity.py`` holds both paths to the same answer.
"""

from __future__ import annotations

from typing import Any

from rest_framework.serializers import ValidationError

from config.fast.plain_input import plain_checks, read_plainly, validated
from selection.api.serializers import (
    SelectInputSerializer,
    messages_problem,
    query_or_messages_problem,
    query_problem,
)


def select_input(data: Any) -> dict[str, Any]:
    """The validated /select input, or ``ValidationError`` with the serializer's
    field errors (as ``is_valid(raise_exception=True)`` raises them)."""
    return validated(data, _plain, SelectInputSerializer)


def _plain(data: Any) -> dict[str, Any] | None:
    """The validated data of a body that is plainly valid, else None."""
    valid = read_plainly(data, _CHECKS)
    if valid is None:
        return None
    hooks: tuple[str, ...] = (query_or_messages_problem(valid),)
    if "query" in valid:
        hooks += (query_problem(valid["query"]),)
    if "messages" in valid:
        hooks += (messages_problem(valid["messages"]),)
    return None if any(hooks) else valid


_CHECKS = plain_checks(SelectInputSerializer())
__all__ = ["ValidationError", "select_input"]
