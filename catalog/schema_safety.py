"""Schemas whose validation always ends, quickly: no endless ``$ref`` loops, regular
expressions matched in linear time, and a step budget for each validation.

Python's ``re`` backtracks, so ``"pattern": "(a+)+$"`` takes seconds on 27
characters; RE2 matches in time linear in the input, and refuses the few constructs
(backreferences, lookaround) that cannot be matched that way. A ``$ref`` cycle that
never moves into the instance (``{"$ref": "#"}``) recurses until Python gives up; one
that passes through ``properties``, ``items`` and the like descends into the
arguments and ends with them, so recursive tree schemas stay legal.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import re2
from jsonschema import validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

# Keyword evaluations one argument check may spend (a tool call's arguments need a
# few hundred; this bounds the fan-out of allOf/anyOf over shared $defs).
MAX_VALIDATION_STEPS = 20_000
TOO_COSTLY_MESSAGE = (
    "validating these arguments against the schema would take too long; "
    "the call is refused"
)

_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
# Keywords applying subschemas to the same instance location (values: schema,
# list of schemas, or map of name -> schema).
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas", "dependencies")
# Keywords applying subschemas to parts of the instance (or to nothing at all).
_DESCEND_ONE = (
    "items",
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_DESCEND_LIST = ("items", "prefixItems")
_DESCEND_MAP = ("properties", "patternProperties", "$defs", "definitions")
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_PLAIN_ANCHORS = ("$anchor", "$dynamicAnchor")
# "$id"/"id" only name an anchor when they are a fragment ("#name").
_ANCHOR_KEYWORDS = (*_PLAIN_ANCHORS, "$id", "id")

Tokens = list[str | int]
Problem = tuple[Tokens, str, str]


_LOOKAROUND = {
    "(?=": "lookahead",
    "(?!": "negative lookahead",
    "(?<=": "lookbehind",
    "(?<!": "negative lookbehind",
}


class ValidationTooCostly(Exception):
    """Raised inside a validation that spent more than its step budget."""


class UnsafePattern(ValueError):
    """A regular expression RE2 cannot match in linear time (or cannot parse)."""


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False
    return options


_OPTIONS = _re2_options()


@lru_cache(maxsize=4096)
def compile_linear(pattern: str) -> Any:
    """``pattern`` compiled by RE2; raises ``UnsafePattern`` naming the construct."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise UnsafePattern(_describe(pattern, exc)) from None


def _describe(pattern: str, exc: Exception) -> str:
    """What RE2 could not accept, in words a curator can act on."""
    for marker, name in _LOOKAROUND.items():
        if marker in pattern:
            return f"uses a construct without a linear-time match ({name})"
    text = exc.args[0] if exc.args else exc
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if "escape" in str(text) and any(f"\\{d}" in pattern for d in "123456789"):
        return "uses a construct without a linear-time match (backreference)"
    return f"uses a construct without a linear-time match ({text})"


def linear_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text``, in linear time."""
    return compile_linear(pattern).search(text) is not None


# ---- registration checks -------------------------------------------------------


@dataclass
class _Graph:
    """Schema positions (by JSON pointer) and the in-place edges between them."""

    root: dict[str, Any]
    nodes: dict[str, Any] = field(default_factory=dict)
    paths: dict[str, Tokens] = field(default_factory=dict)
    anchors: dict[str, str] = field(default_factory=dict)
    edges: dict[str, list[tuple[str, Tokens]]] = field(default_factory=dict)


def safety_problems(schema: dict[str, Any]) -> list[Problem]:
    """Regular expressions RE2 refuses and ``$ref`` cycles that never descend."""
    graph = _build_graph(schema)
    problems = list(_pattern_problems(graph))
    cycle = _first_cycle(graph)
    if cycle is not None:
        problems.append(cycle)
    return problems


def _build_graph(schema: dict[str, Any]) -> _Graph:
    graph = _Graph(schema)
    stack: list[tuple[Any, Tokens]] = [(schema, [])]
    while stack:
        node, path = stack.pop()
        pointer = _pointer(path)
        if pointer in graph.nodes or not isinstance(node, dict):
            continue
        graph.nodes[pointer], graph.paths[pointer] = node, path
        for name in _ANCHOR_KEYWORDS:
            value = node.get(name)
            if isinstance(value, str) and (name in _PLAIN_ANCHORS or value[:1] == "#"):
                graph.anchors[value.lstrip("#")] = pointer
        stack.extend(_subschemas(node, path))
    for pointer in list(graph.nodes):
        graph.edges[pointer] = list(_in_place_edges(graph, pointer))
        for target, _via in graph.edges[pointer]:
            if target not in graph.nodes:
                _adopt(graph, target)
    return graph


def _adopt(graph: _Graph, pointer: str) -> None:
    """A ``$ref`` into an unknown keyword makes that value a schema position too."""
    node = _resolve_pointer(graph.root, pointer)
    if not isinstance(node, dict):
        return
    tokens: Tokens = [_unescape(t) for t in pointer.split("/")[1:]]
    graph.nodes[pointer], graph.paths[pointer] = node, tokens
    graph.edges[pointer] = list(_in_place_edges(graph, pointer))


def _subschemas(node: dict[str, Any], path: Tokens) -> Iterator[tuple[Any, Tokens]]:
    """Every direct subschema of ``node`` (data keywords skipped)."""
    for key, value in node.items():
        if key in _DATA_KEYWORDS:
            continue
        if key in (*_IN_PLACE_MAP, *_DESCEND_MAP) and isinstance(value, dict):
            yield from ((sub, [*path, key, n]) for n, sub in value.items())
        elif key in (*_IN_PLACE_LIST, *_DESCEND_LIST) and isinstance(value, list):
            yield from ((sub, [*path, key, i]) for i, sub in enumerate(value))
        elif key in (*_IN_PLACE_ONE, *_DESCEND_ONE) and isinstance(value, dict):
            yield value, [*path, key]


def _in_place_edges(graph: _Graph, pointer: str) -> Iterator[tuple[str, Tokens]]:
    """(target pointer, keyword path) for each subschema applied at the same
    instance location as the schema at ``pointer``."""
    node, path = graph.nodes[pointer], graph.paths[pointer]
    for key, value in node.items():
        if key in _REF_KEYWORDS and isinstance(value, str):
            target = _ref_target(graph, value)
            if target is not None:
                yield target, [*path, key]
        elif key in _IN_PLACE_ONE and isinstance(value, dict):
            yield _pointer([*path, key]), [*path, key]
        elif key in _IN_PLACE_LIST and isinstance(value, list):
            yield from (
                (_pointer([*path, key, i]), [*path, key, i]) for i in range(len(value))
            )
        elif key in _IN_PLACE_MAP and isinstance(value, dict):
            yield from (
                (_pointer([*path, key, n]), [*path, key, n])
                for n, sub in value.items()
                if isinstance(sub, dict)
            )


def _ref_target(graph: _Graph, ref: str) -> str | None:
    if not ref.startswith("#"):
        return None
    fragment = unquote(ref[1:])
    if fragment == "" or fragment.startswith("/"):
        return fragment
    return graph.anchors.get(fragment)


def _first_cycle(graph: _Graph) -> Problem | None:
    """The first in-place cycle found by an iterative depth-first search."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in graph.nodes:
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(graph.edges.get(start, ())))]
        while stack:
            pointer, edges = stack[-1]
            step = next(edges, None)
            if step is None:
                state[pointer] = 2
                stack.pop()
                continue
            target, via = step
            if state.get(target) == 1:
                return _cycle_problem(via, target)
            if target not in state and target in graph.nodes:
                state[target] = 1
                stack.append((target, iter(graph.edges.get(target, ()))))
    return None


def _cycle_problem(via: Tokens, target: str) -> Problem:
    message = (
        f"leads back to #{target} without descending into the arguments "
        "(only $ref, allOf, anyOf, oneOf, not, if/then/else or dependentSchemas "
        "on the way), so validation would never end; a recursive schema must pass "
        "through properties, items or another keyword that moves into the value"
    )
    return via, "ref-cycle", message


def _pattern_problems(graph: _Graph) -> Iterator[Problem]:
    for path in graph.paths.values():
        node = graph.nodes[_pointer(path)]
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            yield from _check_pattern(pattern, [*path, "pattern"])
        names = node.get("patternProperties")
        if isinstance(names, dict):
            for name in names:
                yield from _check_pattern(name, [*path, "patternProperties", name])


def _check_pattern(pattern: str, path: Tokens) -> Iterator[Problem]:
    try:
        re.compile(pattern)
    except re.error:
        return  # not a regular expression at all: the metaschema check says so
    try:
        compile_linear(pattern)
    except UnsafePattern as exc:
        yield path, "linear-regex", str(exc)


def _pointer(tokens: Tokens) -> str:
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _resolve_pointer(document: Any, pointer: str) -> Any:
    node = document
    for raw in pointer.split("/")[1:]:
        token = _unescape(raw)
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


# ---- validation ----------------------------------------------------------------


class _Budget:
    def __init__(self, steps: int) -> None:
        self.left = steps


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "quiver_validation_budget", default=None
)


def run_with_budget(check: Callable[[], Any], steps: int = MAX_VALIDATION_STEPS) -> Any:
    """``check()`` with at most ``steps`` keyword evaluations, else
    ``ValidationTooCostly``."""
    token = _BUDGET.set(_Budget(steps))
    try:
        return check()
    finally:
        _BUDGET.reset(token)


def _counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = _BUDGET.get()
        if budget is not None:
            budget.left -= 1
            if budget.left < 0:
                raise ValidationTooCostly
        return keyword(validator, value, instance, schema)

    return counted


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not linear_search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if linear_search(pattern, key):
                yield from validator.descend(
                    value, subschema, path=key, schema_path=pattern
                )


def _additional_properties(
    validator: Any, extra: Any, instance: Any, schema: Any
) -> Any:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in known and not any(linear_search(p, key) for p in patterns)
    ]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        listed = ", ".join(repr(key) for key in sorted(extras))
        yield ValidationError(f"Additional properties are not allowed ({listed})")


_LINEAR_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


_LINEAR_CLASSES: dict[type[Validator], type[Validator]] = {}


def linear_time_class(cls: type[Validator]) -> type[Validator]:
    """``cls`` with RE2 regular expressions and every keyword counted against the
    validation's step budget (one class per dialect, made on first use)."""
    found = _LINEAR_CLASSES.get(cls)
    if found is None:
        keywords = dict(cls.VALIDATORS)
        keywords.update(
            {name: fn for name, fn in _LINEAR_KEYWORDS.items() if name in keywords}
        )
        counted = {name: _counted(fn) for name, fn in keywords.items()}
        found = _LINEAR_CLASSES.setdefault(cls, validators.extend(cls, counted))
    return found
