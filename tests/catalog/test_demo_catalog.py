"""The demo catalog that ``make run`` loads: shape, validity and realistic variety.

These tests read the JSON file directly and need neither Django nor a database.
"""

import json
import re
from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from catalog.spec import NO_SCHEMA_MODES, RISK_LEVELS, STATUSES, spec_from_dict

DEMO_PATH = (
    Path(__file__).resolve().parents[2] / "catalog" / "demo" / "demo_catalog.json"
)
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


@cache
def load_demo() -> dict:
    return json.loads(DEMO_PATH.read_text(encoding="utf-8"))


def demo_tools() -> list[dict]:
    return load_demo()["tools"]


def tool_ids() -> list[str]:
    return [tool.get("name", "?") for tool in demo_tools()]


def test_demo_file_declares_the_quiver_format_and_default_catalog():
    data = load_demo()
    assert data["format"] == "quiver"
    assert data["version"] == 1
    assert data["catalog"]["slug"] == "default"
    assert data["catalog"]["name"]
    assert data["catalog"]["description"]
    assert isinstance(data["tools"], list)


def test_demo_file_is_pretty_printed_with_two_space_indent():
    text = DEMO_PATH.read_text(encoding="utf-8")
    assert text == json.dumps(load_demo(), indent=2, ensure_ascii=False) + "\n"


def test_demo_catalog_has_at_least_150_tools():
    assert len(demo_tools()) >= 150


def test_demo_tool_names_are_unique_snake_case():
    names = [tool["name"] for tool in demo_tools()]
    assert len(names) == len(set(names))
    assert all(NAME_PATTERN.match(name) for name in names)


def test_every_demo_tool_is_a_valid_spec():
    for tool in demo_tools():
        spec = spec_from_dict(tool)
        assert spec.name == tool["name"]
        assert spec.risk_level in RISK_LEVELS
        assert spec.status in STATUSES


@pytest.mark.parametrize("tool", demo_tools(), ids=tool_ids())
def test_every_demo_tool_has_the_required_descriptive_fields(tool):
    assert tool["title"].strip()
    assert 20 <= len(tool["description"]) <= 400
    assert tool["category"]
    assert 2 <= len(tool["tags"]) <= 4
    assert 3 <= len(tool["keywords"]) <= 8
    assert all(keyword and " " not in keyword for keyword in tool["keywords"])
    assert 2 <= len(tool["examples"]) <= 3
    assert "parameters" in tool


def test_every_non_null_schema_is_a_valid_draft_2020_12_object_schema():
    for tool in demo_tools():
        schema = tool["parameters"]
        if schema is None:
            continue
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", tool["name"]
        assert isinstance(schema["properties"], dict), tool["name"]
        assert set(schema.get("required", [])) <= set(schema["properties"])


def test_every_top_level_parameter_has_a_type_and_description():
    for tool in demo_tools():
        schema = tool["parameters"]
        if schema is None:
            continue
        for name, prop in schema["properties"].items():
            where = f"{tool['name']}.{name}"
            assert prop.get("description"), where
            assert "type" in prop or "$ref" in prop, where


def test_local_refs_point_at_defs_in_the_same_schema():
    ref_pattern = re.compile(r'"\$ref": "([^"]+)"')
    tools_with_refs = 0
    for tool in demo_tools():
        schema = tool["parameters"]
        if schema is None:
            continue
        refs = ref_pattern.findall(json.dumps(schema))
        if refs:
            tools_with_refs += 1
        for ref in refs:
            assert ref.startswith("#/$defs/"), (tool["name"], ref)
            assert ref.removeprefix("#/$defs/") in schema.get("$defs", {})
    assert tools_with_refs >= 3


def test_demo_tools_span_at_least_twelve_categories():
    categories = {tool["category"] for tool in demo_tools()}
    assert len(categories) >= 12


def test_some_demo_tools_are_unsafe_and_marked_high_risk():
    unsafe = [tool for tool in demo_tools() if tool.get("safe") is False]
    assert len(unsafe) >= 10
    assert all(tool["risk_level"] in ("high", "critical") for tool in unsafe)
    assert any(tool.get("requires_approval") for tool in unsafe)


def test_some_demo_tools_are_restricted_to_roles():
    restricted = [tool for tool in demo_tools() if tool.get("allowed_roles")]
    assert len(restricted) >= 10


def test_some_demo_tools_cost_money_per_call():
    costed = [tool for tool in demo_tools() if tool.get("cost_per_call")]
    assert len(costed) >= 10
    for tool in costed:
        assert isinstance(tool["cost_per_call"], str)
        assert Decimal(tool["cost_per_call"]) > 0
        assert tool["currency"] == "USD"


def test_exactly_the_schemaless_tools_allow_no_schema_with_a_mode():
    schemaless = [tool for tool in demo_tools() if tool["parameters"] is None]
    allowing = [tool for tool in demo_tools() if tool.get("allow_no_schema")]
    assert len(schemaless) == 2
    assert [tool["name"] for tool in allowing] == [t["name"] for t in schemaless]
    assert all(tool["no_schema_mode"] in NO_SCHEMA_MODES for tool in schemaless)
    with_mode = [tool for tool in demo_tools() if tool.get("no_schema_mode")]
    assert with_mode == schemaless


def test_deprecated_demo_tools_name_their_replacement():
    names = {tool["name"] for tool in demo_tools()}
    deprecated = [t for t in demo_tools() if t.get("status") == "deprecated"]
    assert 2 <= len(deprecated) <= 3
    for tool in deprecated:
        mentioned = set(re.findall(r"\b[a-z]+(?:_[a-z0-9]+)+\b", tool["description"]))
        assert mentioned & (names - {tool["name"]}), tool["name"]


def test_avoid_when_only_mentions_tools_that_exist():
    names = {tool["name"] for tool in demo_tools()}
    for tool in demo_tools():
        text = tool.get("avoid_when", "")
        for word in re.findall(r"\b[a-z]+(?:_[a-z0-9]+)+\b", text):
            assert word in names, (tool["name"], word)


def test_some_demo_tools_declare_streaming():
    streaming = [t for t in demo_tools() if "streaming" in t.get("capabilities", [])]
    assert len(streaming) >= 3
