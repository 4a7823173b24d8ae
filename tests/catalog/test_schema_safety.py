"""Schemas whose validation always ends quickly: $ref cycles that never descend are
refused, regular expressions run in linear time (RE2), and every validation has a
step budget, so no tool call can make Quiver spin or answer 500."""

from __future__ import annotations

import time

import pytest

from audit.models import AuditEvent
from catalog.models import Tool
from catalog.schema_policy import check_tool_schema, validate_arguments
from catalog.spec import ToolSpec
from tests.factories import make_tool

EVIL = "a" * 26 + "!"
CHILDREN = {"type": "array", "items": {"$ref": "#/$defs/node"}}
TREE = {
    "type": "object",
    "$defs": {"node": {"type": "object", "properties": {"children": CHILDREN}}},
    "properties": {"root": {"$ref": "#/$defs/node"}},
}


def problems(schema):
    spec = ToolSpec(name="t", parameters=schema)
    return {(p.pointer, p.rule): p.message for p in check_tool_schema(spec)}


def test_a_schema_that_refers_to_itself_in_place_is_refused():
    found = problems({"type": "object", "$ref": "#"})
    assert ("/parameters/$ref", "ref-cycle") in found


def test_a_cycle_through_allof_and_not_is_refused_at_the_closing_ref():
    schema = {
        "type": "object",
        "$defs": {
            "a": {"allOf": [{"$ref": "#/$defs/b"}]},
            "b": {"not": {"$ref": "#/$defs/a"}},
        },
        "properties": {"x": {"$ref": "#/$defs/a"}},
    }
    assert ("/parameters/$defs/b/not/$ref", "ref-cycle") in problems(schema)


def test_a_cycle_through_an_anchor_is_refused():
    schema = {
        "type": "object",
        "$defs": {"a": {"$anchor": "loop", "anyOf": [{"$ref": "#loop"}]}},
        "properties": {"x": {"$ref": "#loop"}},
    }
    assert ("/parameters/$defs/a/anyOf/0/$ref", "ref-cycle") in problems(schema)


def test_a_recursive_tree_schema_that_descends_is_accepted():
    assert problems(TREE) == {}
    spec = ToolSpec(name="t", parameters=TREE)
    args = {"root": {"children": [{"children": [{"children": []}]}]}}
    assert validate_arguments(spec, args, "tree").valid


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [("(?=a)b", "lookahead"), ("(?<!x)y", "negative lookbehind"),
     (r"(a)\1", "backreference")],
)  # fmt: skip
def test_a_pattern_without_a_linear_time_match_is_refused_by_pointer(
    pattern, construct
):
    schema = {"type": "object", "properties": {"x": {"pattern": pattern}}}
    found = problems(schema)
    message = found[("/parameters/properties/x/pattern", "linear-regex")]
    assert message == f"uses a construct without a linear-time match ({construct})"


def test_a_pattern_property_name_is_checked_too():
    schema = {"type": "object", "patternProperties": {"(?=x)": {}}}
    assert ("/parameters/patternProperties/(?=x)", "linear-regex") in problems(schema)


def test_a_catastrophic_pattern_is_matched_in_linear_time():
    schema = {"type": "object", "properties": {"x": {"pattern": "(a+)+$"}}}
    spec = ToolSpec(name="t", parameters=schema)
    validate_arguments(spec, {"x": "warm up"}, "evil")
    started = time.perf_counter()
    check = validate_arguments(spec, {"x": EVIL}, "evil")
    assert time.perf_counter() - started < 0.5
    assert [(e.pointer, e.rule) for e in check.errors] == [("/x", "pattern")]


def test_pattern_properties_and_additional_properties_use_the_same_engine():
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    spec = ToolSpec(name="t", parameters=schema)
    started = time.perf_counter()
    check = validate_arguments(spec, {"aaa": "x", EVIL: 1}, "pp")
    assert time.perf_counter() - started < 0.5
    assert {(e.pointer, e.rule) for e in check.errors} == {
        ("/aaa", "type"),
        ("", "additionalProperties"),
    }


def test_an_exponential_fan_out_of_shared_defs_runs_out_of_budget():
    defs = {f"a{i}": {"allOf": [{"$ref": f"#/$defs/a{i + 1}"}] * 2} for i in range(30)}
    defs["a30"] = {"type": "string"}
    schema = {
        "type": "object",
        "$defs": defs,
        "properties": {"x": {"$ref": "#/$defs/a0"}},
    }
    assert problems(schema) == {}
    started = time.perf_counter()
    check = validate_arguments(ToolSpec(name="t", parameters=schema), {"x": "s"}, "f")
    assert time.perf_counter() - started < 2
    assert [e.rule for e in check.errors] == ["too-costly"]


def test_a_stored_schema_with_a_lookahead_fails_closed_when_validating():
    schema = {"type": "object", "properties": {"x": {"pattern": "(?=a)"}}}
    check = validate_arguments(ToolSpec(name="t", parameters=schema), {"x": "a"}, "l")
    assert not check.valid
    assert check.errors[0].rule == "schema"


def test_a_validation_that_recurses_too_deep_is_an_invalid_call():
    schema = {"type": "object", "additionalProperties": {"$ref": "#"}}
    deep: dict = {"a": 1}
    for _ in range(2000):
        deep = {"a": deep}
    check = validate_arguments(ToolSpec(name="t", parameters=schema), deep, "deep")
    assert [e.rule for e in check.errors] == ["too-costly"]


@pytest.mark.django_db
def test_registering_a_self_referencing_schema_is_a_400_naming_parameters(with_key):
    body = {"name": "loop", "parameters": {"type": "object", "$ref": "#"}}
    response = with_key("curator").post("/api/v1/tools/", body, format="json")
    assert response.status_code == 400
    fields = response.json()["fields"]
    assert fields["parameters"][0].startswith("/parameters/$ref: ref-cycle:")
    assert not Tool.objects.exists()


@pytest.mark.django_db
def test_updating_a_tool_to_a_lookahead_pattern_is_refused(with_key):
    tool = make_tool(name="get_weather")
    schema = {"type": "object", "properties": {"city": {"pattern": "(?!x)"}}}
    response = with_key("curator").patch(
        f"/api/v1/tools/{tool.pk}/", {"parameters": schema}, format="json"
    )
    assert response.status_code == 400
    message = response.json()["fields"]["parameters"][0]
    assert "/parameters/properties/city/pattern: linear-regex" in message
    tool.refresh_from_db()
    assert tool.version == 1


@pytest.mark.django_db
def test_validating_an_evil_string_over_the_api_answers_fast(with_key):
    schema = {"type": "object", "properties": {"x": {"pattern": "(a+)+$"}}}
    make_tool(name="evil", parameters=schema)
    client = with_key("agent")
    body = {"tool": "evil", "arguments": {"x": EVIL}}
    client.post("/api/v1/validate", body, format="json")
    started = time.perf_counter()
    response = client.post("/api/v1/validate", body, format="json")
    assert time.perf_counter() - started < 0.5
    assert response.status_code == 200
    assert response.json()["errors"][0]["rule"] == "pattern"


@pytest.mark.django_db
def test_arguments_nested_500_deep_are_refused_as_object_or_string(with_key):
    make_tool(name="tree", parameters=TREE)
    client = with_key("agent")
    # 500 levels of {"children": [...]}, written out (json.dumps would recurse).
    text = '{"root": ' + '{"children": [' * 500 + "]}" * 500 + "}"
    as_object = client.generic(
        "POST",
        "/api/v1/validate",
        '{"tool": "tree", "arguments": ' + text + "}",
        content_type="application/json",
    )
    assert as_object.status_code == 400
    assert as_object.json()["detail"].startswith("body: JSON nested deeper than")
    as_string = client.post(
        "/api/v1/validate", {"tool": "tree", "arguments": text}, format="json"
    )
    assert as_string.status_code == 200
    assert as_string.json()["errors"][0]["rule"] == "parse"
    assert AuditEvent.objects.filter(event_type="validation").count() == 1
