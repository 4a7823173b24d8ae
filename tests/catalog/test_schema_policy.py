"""Registration-time schema policy, the validator cache and argument validation."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import validators

from catalog import schema_policy
from catalog.schema_policy import (
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    VALIDATOR_CACHE_SIZE,
    ArgumentCheck,
    SchemaPolicyError,
    SchemaProblem,
    check_tool_schema,
    clear_validator_cache,
    get_validator,
    validate_arguments,
)
from catalog.spec import ToolSpec

DRAFT_04 = "http://json-schema.org/draft-04/schema#"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"

WEATHER = {
    "type": "object",
    "required": ["city"],
    "properties": {
        "city": {"type": "string", "description": "The name of the city"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "additionalProperties": False,
}

ORDER = {
    "type": "object",
    "required": ["lines"],
    "properties": {
        "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}},
        "when": {"type": "string", "format": "date"},
    },
    "$defs": {
        "line": {
            "type": "object",
            "required": ["sku", "qty"],
            "properties": {
                "sku": {"type": "string"},
                "qty": {"type": "integer", "minimum": 1},
            },
        }
    },
}


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    clear_validator_cache()
    yield
    clear_validator_cache()


def tool(parameters: Any, **extra: Any) -> ToolSpec:
    return ToolSpec(name="t", parameters=parameters, **extra)


def rules(problems: list[SchemaProblem]) -> list[tuple[str, str]]:
    return [(problem.pointer, problem.rule) for problem in problems]


def nested_not(levels: int) -> dict[str, Any]:
    """A schema of exactly ``levels`` nested objects (the root is level 1)."""
    schema: dict[str, Any] = {}
    for _ in range(levels - 1):
        schema = {"not": schema}
    schema["type"] = "object"
    return schema


# Registration checks ------------------------------------------------------------


def test_a_well_formed_object_schema_has_no_problems() -> None:
    assert check_tool_schema(tool(WEATHER)) == []
    assert check_tool_schema(tool(ORDER)) == []


def test_a_missing_schema_is_refused_at_registration() -> None:
    assert rules(check_tool_schema(tool(None))) == [("/parameters", "required")]


@pytest.mark.parametrize("mode", ["read-only", "human-approval", "full"])
def test_a_missing_schema_is_accepted_with_an_explicit_opt_in_and_mode(
    mode: str,
) -> None:
    spec = tool(None, allow_no_schema=True, no_schema_mode=mode)
    assert check_tool_schema(spec) == []


def test_allow_no_schema_without_a_mode_is_a_problem_naming_the_mode() -> None:
    problems = check_tool_schema(tool(None, allow_no_schema=True))
    assert ("/no_schema_mode", "no-schema-mode") in rules(problems)
    assert ("/parameters", "required") in rules(problems)


def test_an_unknown_no_schema_mode_is_a_problem() -> None:
    spec = tool(None, allow_no_schema=True, no_schema_mode="yolo")
    problems = check_tool_schema(spec)
    assert ("/no_schema_mode", "no-schema-mode") in rules(problems)
    assert "yolo" in problems[0].message


def test_a_mode_without_allow_no_schema_is_a_problem_naming_the_flag() -> None:
    problems = check_tool_schema(tool(None, no_schema_mode="read-only"))
    assert rules(problems) == [
        ("/allow_no_schema", "no-schema-opt-in"),
        ("/parameters", "required"),
    ]
    with_schema = check_tool_schema(tool(WEATHER, no_schema_mode="full"))
    assert rules(with_schema) == [("/allow_no_schema", "no-schema-opt-in")]


def test_parameters_that_are_not_an_object_are_refused() -> None:
    assert rules(check_tool_schema(tool(["type", "object"]))) == [
        ("/parameters", "type")
    ]


def test_a_metaschema_violation_is_reported_with_its_pointer() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "strnig"}}}
    problems = check_tool_schema(tool(schema))
    assert rules(problems) == [("/parameters/properties/city/type", "metaschema")]


def test_an_invalid_regex_pattern_is_a_metaschema_problem() -> None:
    schema = {"type": "object", "properties": {"code": {"pattern": "(unclosed"}}}
    problems = check_tool_schema(tool(schema))
    assert rules(problems) == [("/parameters/properties/code/pattern", "metaschema")]


def test_the_declared_draft_decides_which_metaschema_applies() -> None:
    properties = {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}
    draft4 = {"$schema": DRAFT_04, "type": "object", "properties": properties}
    draft7 = {"$schema": DRAFT_07, "type": "object", "properties": properties}
    default = {"type": "object", "properties": properties}
    assert check_tool_schema(tool(draft4)) == []
    assert rules(check_tool_schema(tool(draft7))) == [
        ("/parameters/properties/n/exclusiveMinimum", "metaschema")
    ]
    assert rules(check_tool_schema(tool(default))) == [
        ("/parameters/properties/n/exclusiveMinimum", "metaschema")
    ]


def test_a_2019_09_schema_with_a_recursive_ref_is_accepted() -> None:
    schema = {
        "$schema": DRAFT_2019,
        "type": "object",
        "properties": {"child": {"$recursiveRef": "#"}},
    }
    assert check_tool_schema(tool(schema)) == []


def test_an_unknown_schema_uri_is_a_problem() -> None:
    schema = {"$schema": "https://example.com/my-dialect", "type": "object"}
    assert rules(check_tool_schema(tool(schema))) == [
        ("/parameters/$schema", "unknown-schema")
    ]


@pytest.mark.parametrize("top", [{"type": "array"}, {"properties": {}}, {}])
def test_the_top_level_type_must_be_object(top: dict[str, Any]) -> None:
    assert ("/parameters/type", "type-object") in rules(check_tool_schema(tool(top)))


@pytest.mark.parametrize(
    "ref",
    [
        "https://example.com/schemas/city.json",
        "http://example.com/city.json#/$defs/x",
        "city.json",
        "file:///etc/passwd",
        "../defs.json#/city",
        "",
    ],
)
def test_a_remote_ref_is_rejected_with_its_pointer(ref: str) -> None:
    schema = {"type": "object", "properties": {"city": {"$ref": ref}}}
    assert rules(check_tool_schema(tool(schema))) == [
        ("/parameters/properties/city/$ref", "remote-ref")
    ]


def test_local_refs_into_defs_definitions_and_any_pointer_are_accepted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/name"},
            "b": {"$ref": "#/definitions/name"},
            "c": {"$ref": "#/properties/a"},
            "d": {"$ref": "#/$defs/list/prefixItems/0"},
            "e": {"$ref": "#"},
        },
        "$defs": {
            "name": {"type": "string"},
            "list": {"prefixItems": [{"type": "null"}]},
        },
        "definitions": {"name": {"type": "string"}},
    }
    assert check_tool_schema(tool(schema)) == []


def test_escaped_and_percent_encoded_pointers_resolve() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/a~1b"},
            "b": {"$ref": "#/$defs/with%20space"},
            "c": {"$ref": "#/$defs/tilde~0"},
        },
        "$defs": {
            "a/b": {"type": "string"},
            "with space": {"type": "string"},
            "tilde~": {"type": "string"},
        },
    }
    assert check_tool_schema(tool(schema)) == []


@pytest.mark.parametrize(
    "ref",
    [
        "#/$defs/missing",
        "#/properties/a/items",
        "#/$defs/list/prefixItems/2",
        "#/$defs/list/prefixItems/01",
        "#nowhere",
    ],
)
def test_a_local_ref_that_does_not_resolve_is_rejected(ref: str) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"$ref": ref}},
        "$defs": {"list": {"prefixItems": [{"type": "string"}, {"type": "null"}]}},
    }
    assert rules(check_tool_schema(tool(schema))) == [
        ("/parameters/properties/b/$ref", "unresolved-ref")
    ]


def test_a_ref_to_a_declared_anchor_is_accepted() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"$ref": "#city"}},
        "$defs": {"c": {"$anchor": "city", "type": "string"}},
    }
    assert check_tool_schema(tool(schema)) == []


def test_a_property_named_ref_is_not_mistaken_for_a_reference() -> None:
    schema = {
        "type": "object",
        "properties": {"$ref": {"type": "string"}, "$id": {"type": "string"}},
        "default": {"$ref": "https://example.com/not-a-schema"},
        "examples": [{"$ref": "elsewhere.json"}],
    }
    assert check_tool_schema(tool(schema)) == []


def test_a_ref_hidden_in_an_unknown_keyword_is_still_checked() -> None:
    schema = {"type": "object", "x-extra": {"$ref": "https://example.com/a.json"}}
    assert rules(check_tool_schema(tool(schema))) == [
        ("/parameters/x-extra/$ref", "remote-ref")
    ]


def test_a_nested_id_that_changes_the_base_uri_is_rejected() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$id": "https://example.com/a", "type": "string"}},
    }
    assert rules(check_tool_schema(tool(schema))) == [
        ("/parameters/properties/a/$id", "embedded-id")
    ]


def test_a_schema_over_the_size_limit_is_rejected() -> None:
    assert MAX_SCHEMA_BYTES == 64 * 1024
    big = {"type": "object", "description": "x" * MAX_SCHEMA_BYTES}
    assert rules(check_tool_schema(tool(big))) == [("/parameters", "max-size")]
    fits = {"type": "object", "description": "x" * (MAX_SCHEMA_BYTES - 100)}
    assert check_tool_schema(tool(fits)) == []


def test_a_schema_at_the_depth_limit_is_accepted_and_one_deeper_is_not() -> None:
    assert MAX_SCHEMA_DEPTH == 32
    assert check_tool_schema(tool(nested_not(MAX_SCHEMA_DEPTH))) == []
    problems = check_tool_schema(tool(nested_not(MAX_SCHEMA_DEPTH + 1)))
    assert rules(problems) == [("/parameters" + "/not" * 32, "max-depth")]


def test_a_pathologically_deep_schema_is_rejected_without_recursion_errors() -> None:
    problems = check_tool_schema(tool(nested_not(20_000)))
    assert [problem.rule for problem in problems] == ["max-depth"]


def test_values_that_are_not_json_are_rejected() -> None:
    schema = {"type": "object", "properties": {"n": {"maximum": float("nan")}}}
    assert rules(check_tool_schema(tool(schema))) == [("/parameters", "json")]


# Compiled validators ------------------------------------------------------------


def test_a_validator_is_compiled_once_per_key() -> None:
    first = get_validator(WEATHER, "weather:abc")
    assert get_validator(WEATHER, "weather:abc") is first
    assert get_validator(WEATHER, "weather:def") is not first


def test_the_validator_uses_the_declared_draft() -> None:
    schema = {"$schema": DRAFT_07, "type": "object"}
    # The compiled class extends the draft's keywords (RE2 patterns, a step budget).
    d7, dflt = get_validator(schema, "d7"), get_validator(WEATHER, "dflt")
    assert d7.META_SCHEMA == validators.Draft7Validator.META_SCHEMA
    assert dflt.META_SCHEMA == validators.Draft202012Validator.META_SCHEMA


def test_an_unknown_schema_uri_cannot_be_compiled() -> None:
    with pytest.raises(SchemaPolicyError):
        get_validator({"$schema": "https://example.com/x", "type": "object"}, "x")


def test_the_cache_evicts_the_least_recently_used_validator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert VALIDATOR_CACHE_SIZE == 4096
    monkeypatch.setattr(schema_policy._CACHE, "maxsize", 2)
    a = get_validator(WEATHER, "a")
    b = get_validator(WEATHER, "b")
    assert get_validator(WEATHER, "a") is a
    get_validator(WEATHER, "c")
    assert get_validator(WEATHER, "a") is a
    assert get_validator(WEATHER, "b") is not b


def test_the_compiled_validator_does_not_see_later_changes_to_the_schema() -> None:
    schema: dict[str, Any] = {"type": "object", "required": ["a"]}
    validator = get_validator(schema, "copy")
    schema["required"] = []
    assert not validator.is_valid({})


def test_a_remote_ref_is_never_fetched_at_validation_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fetched: list[Any] = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: fetched.append(a))
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "https://example.com/a.json"}},
    }
    result = validate_arguments(tool(schema), {"a": 1}, "remote")
    assert fetched == []
    assert not result.valid
    assert [problem.rule for problem in result.errors] == ["unresolved-ref"]


# Argument validation ------------------------------------------------------------


def test_valid_json_string_arguments_are_parsed_and_validated() -> None:
    result = validate_arguments(tool(WEATHER), '{"city": "Oslo"}', "w")
    assert result == ArgumentCheck(True, True, {"city": "Oslo"}, [], "")


def test_already_decoded_arguments_are_validated_too() -> None:
    result = validate_arguments(tool(WEATHER), {"city": "Oslo", "unit": "kelvin"}, "w")
    assert not result.valid
    assert result.validated
    assert rules(result.errors) == [("/unit", "enum")]


@pytest.mark.parametrize("raw", ['{"city": "Oslo"', "", "city=Oslo", "[" * 100_000])
def test_arguments_that_are_not_json_fail_with_a_parse_error(raw: str) -> None:
    result = validate_arguments(tool(WEATHER), raw, "w")
    assert (result.valid, result.validated, result.arguments) == (False, False, None)
    assert [problem.rule for problem in result.errors] == ["parse"]


def test_duplicate_keys_and_nan_are_parse_errors() -> None:
    for raw in ('{"city": "Oslo", "city": "Rome"}', '{"city": NaN}'):
        result = validate_arguments(tool(WEATHER), raw, "w")
        assert [problem.rule for problem in result.errors] == ["parse"]


def test_arguments_that_are_not_an_object_are_refused() -> None:
    result = validate_arguments(tool(WEATHER), '["Oslo"]', "w")
    assert rules(result.errors) == [("", "type")]
    assert result.arguments is None


def test_each_error_names_its_pointer_and_failing_keyword() -> None:
    raw = '{"lines": [{"sku": "a", "qty": 2}, {"sku": 3, "qty": 0}], "when": "soon"}'
    result = validate_arguments(tool(ORDER), raw, "order")
    assert not result.valid
    assert result.arguments is None
    assert rules(result.errors) == [
        ("/lines/1/qty", "minimum"),
        ("/lines/1/sku", "type"),
        ("/when", "format"),
    ]


def test_missing_required_and_extra_properties_are_reported() -> None:
    result = validate_arguments(tool(WEATHER), {"town": "Oslo"}, "w")
    assert rules(result.errors) == [("", "additionalProperties"), ("", "required")]
    assert "'city' is a required property" in [e.message for e in result.errors]


def test_a_no_schema_tool_that_opted_in_is_allowed_but_marked_unvalidated() -> None:
    spec = tool(None, allow_no_schema=True, no_schema_mode="human-approval")
    result = validate_arguments(spec, '{"anything": [1, 2]}', "free")
    assert result == ArgumentCheck(
        True, False, {"anything": [1, 2]}, [], "human-approval"
    )


def test_a_no_schema_tool_without_the_opt_in_fails_closed() -> None:
    result = validate_arguments(tool(None, no_schema_mode="full"), "{}", "closed")
    assert (result.valid, result.validated, result.arguments) == (False, False, None)
    assert [problem.rule for problem in result.errors] == ["no-schema"]


def test_a_parse_error_on_a_no_schema_tool_still_carries_its_mode() -> None:
    spec = tool(None, allow_no_schema=True, no_schema_mode="read-only")
    result = validate_arguments(spec, "{oops", "free")
    assert not result.valid
    assert result.no_schema_mode == "read-only"
