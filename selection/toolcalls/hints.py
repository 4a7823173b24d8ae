"""Short repair hints a model can act on, from schema errors (pure).

A hint names the argument and what it must be ("`city` is required", "`unit` must
be one of celsius, fahrenheit"); the agent can hand it back to the model as the
tool result so the next call is right.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jsonschema.exceptions import ValidationError

from catalog.schema_safety import UnsafePattern, compile_linear

MAX_HINTS = 3
_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


def argument_name(path: Sequence[str | int]) -> str:
    """``address.city`` / ``stops[0].name`` for a path into the arguments."""
    name = ""
    for token in path:
        if isinstance(token, int):
            name += f"[{token}]"
        else:
            name = f"{name}.{token}" if name else str(token)
    return name


def _quoted(path: Sequence[str | int]) -> str:
    name = argument_name(path)
    return f"`{name}`" if name else "the arguments"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _required(error: ValidationError) -> list[str]:
    instance = error.instance if isinstance(error.instance, dict) else {}
    path = list(error.absolute_path)
    return [
        f"{_quoted([*path, name])} is required"
        for name in error.validator_value
        if isinstance(name, str) and name not in instance
    ]


def _additional(error: ValidationError) -> list[str]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = schema.get("properties") or {}
    patterns = list((schema.get("patternProperties") or {}).keys())
    instance = error.instance if isinstance(error.instance, dict) else {}
    path = list(error.absolute_path)
    extra = [
        key
        for key in instance
        if key not in known and not any(_matches(p, key) for p in patterns)
    ]
    return [f"{_quoted([*path, key])} is not an argument of this tool" for key in extra]


def _matches(pattern: str, key: str) -> bool:
    """RE2 (linear time): a key from model output must never stall the answer."""
    try:
        return compile_linear(pattern).search(key) is not None
    except UnsafePattern:
        return False


def _type(error: ValidationError) -> str:
    wanted = error.validator_value
    names = wanted if isinstance(wanted, list) else [wanted]
    words = " or ".join(_TYPE_WORDS.get(str(n), str(n)) for n in names)
    return f"{_quoted(error.absolute_path)} must be {words}"


_SENTENCES: dict[str, Callable[[ValidationError], str]] = {
    "type": _type,
    "enum": lambda e: (
        f"{_quoted(e.absolute_path)} must be one of "
        + ", ".join(_value(v) for v in e.validator_value)
    ),
    "const": lambda e: (
        f"{_quoted(e.absolute_path)} must be {_value(e.validator_value)}"
    ),
    "minimum": lambda e: (
        f"{_quoted(e.absolute_path)} must be at least {e.validator_value}"
    ),
    "maximum": lambda e: (
        f"{_quoted(e.absolute_path)} must be at most {e.validator_value}"
    ),
    "exclusiveMinimum": lambda e: (
        f"{_quoted(e.absolute_path)} must be more than {e.validator_value}"
    ),
    "exclusiveMaximum": lambda e: (
        f"{_quoted(e.absolute_path)} must be less than {e.validator_value}"
    ),
    "minLength": lambda e: (
        f"{_quoted(e.absolute_path)} must have at least {e.validator_value} characters"
    ),
    "maxLength": lambda e: (
        f"{_quoted(e.absolute_path)} must have at most {e.validator_value} characters"
    ),
    "minItems": lambda e: (
        f"{_quoted(e.absolute_path)} must have at least {e.validator_value} items"
    ),
    "maxItems": lambda e: (
        f"{_quoted(e.absolute_path)} must have at most {e.validator_value} items"
    ),
    "pattern": lambda e: (
        f"{_quoted(e.absolute_path)} must match the pattern {e.validator_value}"
    ),
    "format": lambda e: (
        f"{_quoted(e.absolute_path)} must be a valid {e.validator_value}"
    ),
}


def schema_hints(errors: Iterable[ValidationError]) -> list[str]:
    """One sentence per problem, in order, without repeats."""
    sentences: list[str] = []
    for error in errors:
        rule = str(error.validator)
        if rule == "required":
            found = _required(error)
        elif rule == "additionalProperties":
            found = _additional(error)
        elif rule in _SENTENCES:
            found = [_SENTENCES[rule](error)]
        else:
            found = [f"{_quoted(error.absolute_path)}: {error.message}"]
        sentences.extend(s for s in found if s not in sentences)
    return sentences


def join_hints(sentences: Iterable[str]) -> str:
    """At most ``MAX_HINTS`` sentences as one line ("" when there is nothing)."""
    unique: list[str] = []
    for sentence in sentences:
        if sentence and sentence not in unique:
            unique.append(sentence)
    return "; ".join(unique[:MAX_HINTS])
