"""Fail-closed JSON Schema policy for tool registration and argument validation.

A tool's ``parameters`` (seed 001) that is missing, malformed, huge, deeply nested or
points at other documents is refused at registration; at call time arguments are
validated by a validator compiled once per tool version that never fetches."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from jsonschema import validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable

from catalog.schema_fastpath import plainly_valid
from catalog.schema_safety import (
    TOO_COSTLY_MESSAGE,
    UnsafePattern,
    ValidationTooCostly,
    linear_time_class,
    run_with_budget,
    safety_problems,
)
from catalog.spec import NO_SCHEMA_MODES, ToolSpec
from config import jsonparse

MAX_SCHEMA_BYTES = 64 * 1024
MAX_SCHEMA_DEPTH = 32
VALIDATOR_CACHE_SIZE = 4096
# Arguments given as a JSON string nest at most this deep (as a request body does).
MAX_ARGUMENT_DEPTH = jsonparse.MAX_BODY_DEPTH

DRAFT_URIS: dict[str, type[Validator]] = {
    "json-schema.org/draft-04/schema": validators.Draft4Validator,
    "json-schema.org/draft-06/schema": validators.Draft6Validator,
    "json-schema.org/draft-07/schema": validators.Draft7Validator,
    "json-schema.org/draft/2019-09/schema": validators.Draft201909Validator,
    "json-schema.org/draft/2020-12/schema": validators.Draft202012Validator,
}
DEFAULT_VALIDATOR: type[Validator] = validators.Draft202012Validator

# Keywords whose value is instance data, never a schema: "$ref" keys inside are data.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
# Keywords whose value maps names (not keywords) to subschemas.
_SCHEMA_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
) | {"dependencies"}
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_ANCHOR_KEYWORDS = ("$anchor", "$dynamicAnchor")


@dataclass(frozen=True)
class SchemaProblem:
    """One reason a schema or a set of arguments was refused.

    ``pointer`` is a JSON pointer (into the tool for schema checks, into the
    arguments for argument checks), ``rule`` a short machine-readable name.
    """

    pointer: str
    rule: str
    message: str


@dataclass
class ArgumentCheck:
    """The outcome of parsing and validating one tool call's arguments.

    ``arguments`` is only set when ``valid`` is true, so unvalidated arguments cannot
    be passed on by mistake. ``validated`` is false when no schema was applied (a
    no-schema tool, or a parse failure); ``no_schema_mode`` then says which
    constrained mode the caller must enforce.
    """

    valid: bool
    validated: bool
    arguments: dict[str, Any] | None
    errors: list[SchemaProblem] = field(default_factory=list)
    no_schema_mode: str = ""


class SchemaPolicyError(ValueError):
    """A schema that cannot be compiled into a validator (e.g. unknown ``$schema``)."""


def escape_pointer_token(token: str | int) -> str:
    """Escape one JSON pointer reference token (RFC 6901: ``~`` then ``/``)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def join_pointer(base: str, tokens: Iterable[str | int]) -> str:
    """Append escaped ``tokens`` to the JSON pointer ``base``."""
    return base + "".join("/" + escape_pointer_token(t) for t in tokens)


def check_tool_schema(spec: ToolSpec) -> list[SchemaProblem]:
    """All reasons ``spec``'s schema may not be registered; empty means acceptable.

    Bounds (depth, size, JSON-ness) are checked first and stop further checks, so a
    hostile document never reaches the recursive metaschema validation.
    """
    problems = _opt_in_problems(spec)
    schema = spec.parameters
    if schema is None:
        if not (spec.allow_no_schema and spec.no_schema_mode in NO_SCHEMA_MODES):
            message = "is required unless allow_no_schema is set with a no_schema_mode"
            problems.append(_at([], "required", message))
        return problems
    if not isinstance(schema, dict):
        return [*problems, _at([], "type", "parameters must be a JSON object")]
    bounds = _bounds_problems(schema)
    if bounds:
        return problems + bounds
    return problems + _schema_problems(schema)


def _at(tokens: Iterable[str | int], rule: str, message: str) -> SchemaProblem:
    """A problem located by ``tokens`` inside the tool's ``parameters``."""
    return SchemaProblem(join_pointer("/parameters", tokens), rule, message)


def _opt_in_problems(spec: ToolSpec) -> list[SchemaProblem]:
    """The no-schema opt-in must come as a pair: the flag and a known mode."""
    mode = spec.no_schema_mode
    if spec.allow_no_schema and mode not in NO_SCHEMA_MODES:
        allowed = ", ".join(NO_SCHEMA_MODES)
        detail = f"is {mode!r}" if mode else "is empty"
        message = f"allow_no_schema needs a no_schema_mode of {allowed}; it {detail}"
        return [SchemaProblem("/no_schema_mode", "no-schema-mode", message)]
    if mode and not spec.allow_no_schema:
        message = f"no_schema_mode {mode!r} is set but allow_no_schema is not true"
        return [SchemaProblem("/allow_no_schema", "no-schema-opt-in", message)]
    return []


def _bounds_problems(schema: dict[str, Any]) -> list[SchemaProblem]:
    """Depth, serialisability and size limits, checked without recursion."""
    too_deep = _first_too_deep(schema, MAX_SCHEMA_DEPTH)
    if too_deep is not None:
        message = f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        return [_at(too_deep, "max-depth", message)]
    try:
        text = json.dumps(schema, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        return [_at([], "json", f"not valid JSON data: {exc}")]
    size = len(text.encode("utf-8"))
    if size > MAX_SCHEMA_BYTES:
        message = f"the schema is {size} bytes of JSON; the limit is {MAX_SCHEMA_BYTES}"
        return [_at([], "max-size", message)]
    return []


def _first_too_deep(document: Any, limit: int) -> list[str | int] | None:
    """Path of the first container nested more than ``limit`` levels, if any.

    The top-level object is level 1; every dict or list inside adds a level.
    """
    stack: list[tuple[Any, list[str | int]]] = [(document, [])]
    while stack:
        node, path = stack.pop()
        if len(path) >= limit and isinstance(node, (dict, list)):
            return path
        children: Iterable[tuple[str | int, Any]]
        if isinstance(node, dict):
            children = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            continue
        stack.extend((child, [*path, key]) for key, child in children)
    return None


def _schema_problems(schema: dict[str, Any]) -> list[SchemaProblem]:
    """Dialect, metaschema, top-level type and reference checks."""
    try:
        cls = validator_class_for(schema)
    except SchemaPolicyError as exc:
        return [_at(["$schema"], "unknown-schema", str(exc))]
    problems = list(_metaschema_problems(schema, cls))
    if schema.get("type") != "object":
        message = 'the top-level schema must have "type": "object"'
        problems.append(_at(["type"], "type-object", message))
    # Cycles and regular expressions are only looked for once every $ref resolves.
    problems.extend(_ref_problems(schema) or [_at(*p) for p in safety_problems(schema)])
    return problems


def validator_class_for(schema: dict[str, Any]) -> type[Validator]:
    """The validator class for ``schema``'s ``$schema`` (2020-12 when absent).

    ``http``/``https`` and a trailing ``#`` are ignored when matching the URI; any
    other URI is refused rather than guessed at.
    """
    uri = schema.get("$schema")
    if uri is None:
        return DEFAULT_VALIDATOR
    if not isinstance(uri, str):
        raise SchemaPolicyError("$schema must be a string URI")
    normalised = uri.strip().rstrip("#")
    for scheme in ("https://", "http://"):
        if normalised.startswith(scheme):
            normalised = normalised[len(scheme) :]
            break
    found = DRAFT_URIS.get(normalised)
    if found is None:
        raise SchemaPolicyError(f"unknown $schema {uri!r}")
    return found


def _metaschema_problems(
    schema: dict[str, Any], cls: type[Validator]
) -> Iterator[SchemaProblem]:
    """Every way ``schema`` fails its dialect's metaschema (formats such as regex
    patterns included), sorted so the report is stable."""
    if plainly_valid(schema, cls):  # the same verdict, fast (see schema_fastpath)
        return
    meta = cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER)
    errors = sorted(meta.iter_errors(schema), key=_error_sort_key)
    for error in errors:
        message = f"{error.message} (metaschema keyword {error.validator!r})"
        yield _at(error.absolute_path, "metaschema", message)


def _error_sort_key(error: ValidationError) -> tuple[str, str, str]:
    """Order errors by location, then keyword, so reports are stable."""
    return (join_pointer("", error.absolute_path), str(error.validator), error.message)


@dataclass
class _RefScan:
    """What a walk over a schema found: references, anchors and nested ``$id``s."""

    refs: list[tuple[list[str | int], str]] = field(default_factory=list)
    anchors: set[str] = field(default_factory=set)
    problems: list[SchemaProblem] = field(default_factory=list)


def _ref_problems(schema: dict[str, Any]) -> list[SchemaProblem]:
    """Every reference must be a fragment that resolves inside ``schema`` itself."""
    id_keyword = (
        "id" if validator_class_for(schema) is validators.Draft4Validator else "$id"
    )
    scan = _scan_references(schema, id_keyword)
    problems = scan.problems
    for path, ref in scan.refs:
        problem = _check_reference(schema, ref, scan.anchors)
        if problem is not None:
            rule, message = problem
            problems.append(_at(path, rule, message))
    return sorted(problems, key=lambda problem: (problem.pointer, problem.rule))


def _scan_references(schema: dict[str, Any], id_keyword: str) -> _RefScan:
    """Walk every schema position (data keywords such as ``enum`` are skipped, and
    property names are never mistaken for keywords) collecting references."""
    scan = _RefScan()
    stack: list[tuple[Any, list[str | int]]] = [(schema, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            stack.extend((item, [*path, i]) for i, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            _note_keyword(scan, path, key, value, id_keyword)
            if key in _DATA_KEYWORDS:
                continue
            if key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
                stack.extend((sub, [*path, key, name]) for name, sub in value.items())
            elif isinstance(value, (dict, list)):
                stack.append((value, [*path, key]))
    return scan


def _note_keyword(
    scan: _RefScan, path: list[str | int], key: str, value: Any, id_keyword: str
) -> None:
    """Record a reference, an anchor, or a nested base-URI change at one keyword."""
    if not isinstance(value, str):
        return
    if key in _REF_KEYWORDS:
        scan.refs.append(([*path, key], value))
    elif key in _ANCHOR_KEYWORDS:
        scan.anchors.add(value)
    elif key == id_keyword:
        if value.startswith("#"):
            scan.anchors.add(value[1:])
        elif path:
            message = (
                f"a nested {key} changes the base URI of local references; "
                "keep subschemas in $defs without their own id"
            )
            scan.problems.append(_at([*path, key], "embedded-id", message))


def _check_reference(
    schema: dict[str, Any], ref: str, anchors: set[str]
) -> tuple[str, str] | None:
    """``(rule, message)`` when ``ref`` is not a resolvable local fragment."""
    if not ref.startswith("#"):
        return (
            "remote-ref",
            f"reference {ref!r} points outside the schema; only local '#...' "
            "references are allowed",
        )
    fragment = unquote(ref[1:])
    if fragment == "":
        return None
    if fragment.startswith("/"):
        if _pointer_exists(schema, fragment):
            return None
        return "unresolved-ref", f"reference {ref!r} does not resolve in the schema"
    if fragment in anchors:
        return None
    return "unresolved-ref", f"reference {ref!r} names no anchor in the schema"


def _pointer_exists(document: Any, pointer: str) -> bool:
    """Whether the JSON pointer ``pointer`` (RFC 6901) resolves in ``document``."""
    node = document
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and _is_index(token, len(node)):
            node = node[int(token)]
        else:
            return False
    return True


def _is_index(token: str, length: int) -> bool:
    """Whether ``token`` is a JSON pointer array index within ``length``."""
    if not token.isascii() or not token.isdigit():
        return False
    if len(token) > 1 and token.startswith("0"):
        return False
    return int(token) < length


def _refuse_retrieval(uri: str) -> Resource[Any]:
    """Registry hook: nothing outside the schema is ever fetched."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


# referencing's attrs classes use private field aliases mypy cannot see.
NO_RETRIEVAL_REGISTRY: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


class _ValidatorCache:
    """A thread-safe LRU of compiled validators keyed by the caller's key."""

    def __init__(self, maxsize: int) -> None:
        """An empty cache holding at most ``maxsize`` validators."""
        self.maxsize = maxsize
        self._items: OrderedDict[str, Validator] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, schema: dict[str, Any], key: str) -> Validator:
        """The cached validator for ``key``, compiling ``schema`` on a miss."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        compiled = compile_validator(schema)
        with self._lock:
            self._items[key] = compiled
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return compiled

    def clear(self) -> None:
        """Drop every cached validator."""
        with self._lock:
            self._items.clear()


_CACHE = _ValidatorCache(VALIDATOR_CACHE_SIZE)


def compile_validator(schema: dict[str, Any]) -> Validator:
    """A validator for a private copy of ``schema``, in its own dialect, asserting
    ``format`` and unable to retrieve any remote reference."""
    cls = linear_time_class(validator_class_for(schema))
    private = json.loads(json.dumps(schema))
    return cls(
        private, registry=NO_RETRIEVAL_REGISTRY, format_checker=cls.FORMAT_CHECKER
    )


def get_validator(schema: dict[str, Any], key: str) -> Validator:
    """The validator for ``schema``, compiled once per ``key``.

    ``key`` must change whenever the schema does (tool id plus content hash): a hit
    returns the validator compiled for the first schema seen under that key.
    Raises ``SchemaPolicyError`` for an unknown ``$schema``.
    """
    return _CACHE.get(schema, key)


def clear_validator_cache() -> None:
    """Forget every compiled validator (tests, or after bulk schema changes)."""
    _CACHE.clear()


def validate_arguments(
    spec: ToolSpec, arguments: dict[str, Any] | str, key: str
) -> ArgumentCheck:
    """Parse then validate one tool call's arguments against the tool's schema.

    Follows seed 001: a JSON string is parsed first (failures get rule ``parse``);
    a tool without a schema is only callable if it opted in, and its result is
    marked ``validated=False`` with its ``no_schema_mode``; otherwise every schema
    error is listed with a pointer into the arguments and the failing keyword.
    """
    mode = spec.no_schema_mode if spec.parameters is None else ""
    parsed, problem = parse_arguments(arguments)
    if parsed is None:
        problems = [problem] if problem is not None else []
        return ArgumentCheck(False, False, None, problems, mode)
    if spec.parameters is None:
        return _no_schema_check(spec, parsed)
    problems = _argument_problems(spec.parameters, parsed, key)
    if problems:
        return ArgumentCheck(False, True, None, problems)
    return ArgumentCheck(True, True, parsed, [])


def parse_arguments(
    arguments: dict[str, Any] | str,
) -> tuple[dict[str, Any] | None, SchemaProblem | None]:
    """Decode ``arguments`` (a JSON string or an already decoded object).

    Duplicate keys and NaN/Infinity are refused: they mean different things to
    different parsers, so the tool might not see what was validated.
    """
    value: Any = arguments
    if isinstance(arguments, str):
        try:
            value = jsonparse.loads(
                arguments,
                max_depth=MAX_ARGUMENT_DEPTH,
                object_pairs_hook=jsonparse.refuse_duplicate_keys,
            )
        except ValueError as exc:
            return None, SchemaProblem("", "parse", f"arguments are not JSON: {exc}")
    if not isinstance(value, dict):
        return None, SchemaProblem("", "type", "arguments must be a JSON object")
    bad = jsonparse.find_bad_text(value)
    if bad is not None:
        message = f"arguments.{bad}: {jsonparse.BAD_TEXT_RULE}"
        return None, SchemaProblem("", "text", message)
    return value, None


def _no_schema_check(spec: ToolSpec, parsed: dict[str, Any]) -> ArgumentCheck:
    """A tool without a schema: allowed (unvalidated) only with a valid opt-in."""
    mode = spec.no_schema_mode
    if spec.allow_no_schema and mode in NO_SCHEMA_MODES:
        return ArgumentCheck(True, False, parsed, [], mode)
    problem = SchemaProblem(
        "", "no-schema", "the tool has no parameters schema and did not opt in"
    )
    return ArgumentCheck(False, False, None, [problem], mode)


def _argument_problems(
    schema: dict[str, Any], arguments: dict[str, Any], key: str
) -> list[SchemaProblem]:
    """Schema errors for ``arguments``; a schema that cannot be used fails closed."""
    try:
        validator = get_validator(schema, key)
        errors = run_with_budget(
            lambda: sorted(validator.iter_errors(arguments), key=_error_sort_key)
        )
    except (SchemaPolicyError, UnsafePattern) as exc:
        return [SchemaProblem("", "schema", f"the tool's schema is unusable: {exc}")]
    except Unresolvable as exc:
        return [SchemaProblem("", "unresolved-ref", f"schema reference failed: {exc}")]
    except (ValidationTooCostly, RecursionError):
        return [SchemaProblem("", "too-costly", TOO_COSTLY_MESSAGE)]
    return [
        SchemaProblem(
            join_pointer("", error.absolute_path), str(error.validator), error.message
        )
        for error in errors
    ]
