"""JSON from callers, refused early when it could hurt: too deep, or unstorable text.

``json.loads`` recurses once per nesting level, so a body of 10,000 ``[`` raises
RecursionError deep inside the parser (and every recursive walk after it would too).
``loads`` counts brackets outside strings first, in linear time and without
recursion, and refuses a document nested deeper than its limit before parsing.

Postgres text cannot hold NUL, and a lone UTF-16 surrogate cannot be encoded as
UTF-8, so a string with either would fail when written, half way through a request.
``find_bad_text`` names the first such string (or key) by its path.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from itertools import accumulate
from typing import Any

# Deepest nesting accepted in an API body; a tool schema (32 levels) inside an import
# document inside a list stays well within it.
MAX_BODY_DEPTH = 64
BAD_TEXT_RULE = "must not contain NUL or unpaired surrogate characters"

# A complete JSON string token (escapes included), written without nested repeats.
_STRING_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


class JSONTooDeep(ValueError):
    """A JSON document nested deeper than the caller's limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")
        self.limit = limit


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of ``text``, ignoring brackets inside strings."""
    brackets = _NOT_BRACKET.sub("", _STRING_TOKEN.sub("", text))
    steps = (1 if char in "[{" else -1 for char in brackets)
    return max(accumulate(steps, initial=0))


def check_depth(text: str, limit: int = MAX_BODY_DEPTH) -> None:
    """Raise ``JSONTooDeep`` when ``text`` nests deeper than ``limit``."""
    if nesting_depth(text) > limit:
        raise JSONTooDeep(limit)


def loads(text: str | bytes, *, max_depth: int = MAX_BODY_DEPTH, **options: Any) -> Any:
    """``json.loads`` after a depth check; raises ``ValueError`` (``JSONTooDeep``,
    ``JSONDecodeError`` or ``UnicodeDecodeError``) for anything it refuses.

    NaN and Infinity are refused unless the caller passes its own ``parse_constant``:
    they are not JSON, and Postgres' jsonb cannot store them.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_depth(text, max_depth)
    options.setdefault("parse_constant", refuse_constant)
    try:
        return json.loads(text, **options)
    except RecursionError as exc:  # only if a caller's limit is set very high
        raise JSONTooDeep(max_depth) from exc


def loads_unique(
    text: str | bytes, *, max_depth: int = MAX_BODY_DEPTH, **options: Any
) -> Any:
    """``loads``, refusing an object that repeats a key (at any depth) with
    ``DuplicateKey`` naming its path: parsers disagree on which value wins, so a
    checker and a tool could read different values from one body."""
    repeated: list[bool] = []

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) == len(pairs):
            return result
        repeated.append(True)
        return _Repeated(result, _first_repeat(pairs))

    data = loads(text, max_depth=max_depth, object_pairs_hook=build, **options)
    if repeated:
        raise DuplicateKey(find_repeated_key(data) or "body")
    return data


DUPLICATE_KEY_RULE = "is a duplicate key: each key may appear once in its object"


class FieldError(ValueError):
    """A text field's JSON refused; the message names the field (or the path
    inside it) and the rule, as the API names them."""


def read_field(text: str, field: str) -> Any:
    """The JSON value typed or uploaded in ``field`` (a form's textarea, a file),
    held to every rule of an API body: ``MAX_BODY_DEPTH``, no repeated key, no
    NaN or number too large for a float, no NUL or lone surrogate. Raises
    ``FieldError``."""
    try:
        value = loads_unique(text, parse_float=finite_float)
    except json.JSONDecodeError as exc:
        where = f"(line {exc.lineno}, column {exc.colno})"
        raise FieldError(f"{field}: not valid JSON: {exc.msg} {where}") from exc
    except DuplicateKey as exc:
        raise FieldError(f"{within(field, exc.path)}: {DUPLICATE_KEY_RULE}") from exc
    except ValueError as exc:
        raise FieldError(f"{field}: not valid JSON: {exc}") from exc
    bad = find_bad_text(value, field)
    if bad is not None:
        raise FieldError(f"{bad}: {BAD_TEXT_RULE}")
    return value


def within(field: str, path: str) -> str:
    """``path`` (``a.b``, ``[2].c``) inside ``field``."""
    if not path:
        return field
    return f"{field}{path}" if path.startswith("[") else f"{field}.{path}"


class DuplicateKey(ValueError):
    """A JSON object with a key given twice; ``path`` names it (``a.b[2].k``)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: {DUPLICATE_KEY_RULE}")
        self.path = path


class _Repeated(dict[str, Any]):
    """An object parsed from pairs that repeated ``key``."""

    def __init__(self, items: dict[str, Any], key: str) -> None:
        super().__init__(items)
        self.key = key


def _first_repeat(pairs: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return ""


def find_repeated_key(value: Any) -> str | None:
    """The path of the first repeated key ``loads_unique`` met, walked without
    recursion (objects it built are ``_Repeated`` where a key repeated)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Repeated):
            return _join(path, printable(node.key))
        if isinstance(node, dict):
            stack.extend(_children(path, node.items()))
        elif isinstance(node, list):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node))
    return None


def finite_float(text: str) -> float:
    """``json`` hook: a number too large for a float (``1e400``) is refused, not
    read as infinity, which JSON cannot write back nor Postgres store."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is too large a number")
    return value


def refuse_constant(name: str) -> Any:
    """``json`` hook: refuse NaN, Infinity and -Infinity."""
    raise ValueError(f"{name} is not allowed")


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json`` hook: build an object, refusing a repeated key (parsers disagree on
    which one wins, so a checker and a tool could see different values)."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def has_bad_text(text: str) -> bool:
    """Whether ``text`` holds a NUL or an unpaired surrogate."""
    return _BAD_TEXT.search(text) is not None


def find_bad_text(value: Any, root: str = "") -> str | None:
    """The path (``a.b[2]``) of the first string or key holding a NUL or a lone
    surrogate in the decoded JSON ``value``, or None; walks without recursion."""
    stack: list[tuple[Any, str]] = [(value, root)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if has_bad_text(node):
                return path or "body"
        elif isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and has_bad_text(key):
                    return _join(path, printable(key))
            stack.extend(_children(path, node.items()))
        elif isinstance(node, (list, tuple)):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node))
    return None


def _children(path: str, items: Iterable[tuple[Any, Any]]) -> list[tuple[Any, str]]:
    return [(child, _join(path, str(key))) for key, child in items]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def printable(text: str) -> str:
    """``text`` with NUL and lone surrogates shown as ``\\uXXXX`` escapes."""
    return _BAD_TEXT.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def printable_tree(value: Any) -> Any:
    """A decoded JSON ``value`` with every string and key ``printable``: storable
    and encodable, for a document that is refused but still read (its depth was
    checked when it was parsed, so the recursion is bounded)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(k)): printable_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_tree(item) for item in value]
    return value
