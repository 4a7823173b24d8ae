"""/select's input (REST, batch items, MCP ``search_tools``) under the rules that
``SelectInputSerializer`` declares, without DRF's field machinery for a plain body.

DRF builds and runs a field object per declared field on every body
(config.fast.plain_input; its gain: bench/README.md, "Fast paths").
``select_input`` first looks at the body as it is: when every value already has
the declared type, lies within the declared bounds and breaks none of the
serializer's own rules, it returns exactly the serializer's validated data
(defaults filled in, numbers as their field makes them). Any other body (a missing
or unknown field, a string for a number, anything out of range) goes to the
serializer, which accepts it or refuses it naming the field, in its own words.
The plain path never refuses anything, and it reads every bound from the
serializer's fields: there is one set of rules and one set of messages.
``tests/fastpath/test_parity.py`` holds both paths to the same answer.
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
