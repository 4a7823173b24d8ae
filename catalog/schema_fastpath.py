"""A fast, exact "no metaschema error" verdict for plain tool schemas.

Walking a schema through the 2020-12 metaschema with jsonschema costs about a
millisecond (``$dynamicRef`` lookups), most of an import's time per tool. Most
tool schemas use only a handful of keywords whose metaschema rules are simple, so
``plainly_valid`` checks exactly those rules itself. It answers True only when
every keyword met is one of them and obeys them (then the metaschema has no error
to report); anything else, including any unknown keyword, answers False and the
caller runs the full metaschema validation, which gives the messages.
"""

from __future__ import annotations

from typing import Any

from jsonschema import validators

SIMPLE_TYPES = frozenset(
    {"array", "boolean", "integer", "null", "number", "object", "string"}
)
_STRINGS = frozenset({"description", "title"})
_ANY = frozenset({"default"})
_SCHEMA_MAPS = frozenset({"properties"})
_SUBSCHEMAS = frozenset({"items", "additionalProperties"})


def plainly_valid(schema: Any, cls: type) -> bool:
    """True only if ``schema`` surely passes the 2020-12 metaschema."""
    if cls is not validators.Draft202012Validator:
        return False
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            return False
        for key, value in node.items():
            if not _keyword_ok(key, value, stack):
                return False
    return True


def _keyword_ok(key: str, value: Any, stack: list[Any]) -> bool:
    if key in _STRINGS:
        return isinstance(value, str)
    if key in _ANY:
        return True
    if key in _SUBSCHEMAS:
        stack.append(value)
        return True
    if key in _SCHEMA_MAPS:
        if not isinstance(value, dict):
            return False
        stack.extend(value.values())
        return True
    if key == "type":
        return _type_ok(value)
    if key == "required":
        return _unique_strings(value)
    if key == "enum":
        return isinstance(value, list)
    return False


def _type_ok(value: Any) -> bool:
    if isinstance(value, str):
        return value in SIMPLE_TYPES
    return (
        isinstance(value, list)
        and len(value) > 0
        and _unique_strings(value)
        and all(item in SIMPLE_TYPES for item in value)
    )


def _unique_strings(value: Any) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(item, str) for item in value)
        and len(set(value)) == len(value)
    )
