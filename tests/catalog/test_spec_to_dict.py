"""A tool's canonical JSON is what ``asdict`` gave (the schema passed through as
is, the cost as text), with lists and objects of its own: changing the dict never
changes the spec, and an exported definition never shares the stored schema."""

from __future__ import annotations

import copy
from dataclasses import asdict
from decimal import Decimal

from catalog.formats import FORMATS, export_tool
from tests.factories import make_spec


def a_spec():
    return make_spec(
        "get_weather",
        tags=["weather", "travel"],
        capabilities=["read-only"],
        annotations={"readOnlyHint": True, "x": {"nested": [1, {"deep": "y"}]}},
        cost_per_call=Decimal("0.0025"),
        examples=["weather in Paris"],
    )


def test_the_canonical_dict_is_what_asdict_gave():
    spec = a_spec()
    before = asdict(spec)
    before["parameters"] = spec.parameters
    before["cost_per_call"] = format(spec.cost_per_call, "f")
    assert spec.to_dict() == before


def test_changing_the_dict_never_changes_the_spec():
    spec = a_spec()
    kept = copy.deepcopy(spec)
    data = spec.to_dict()
    data["tags"].append("changed")
    data["annotations"]["x"]["nested"][1]["deep"] = "changed"
    assert spec == kept


def test_no_exported_definition_shares_the_schema():
    spec = a_spec()
    for fmt in FORMATS:
        exported = export_tool(spec, fmt)
        text = repr(exported)
        assert "input_schema" in text or "parameters" in text or "inputSchema" in text
        for value in _dicts(exported):
            assert value is not spec.parameters


def _dicts(value):
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _dicts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _dicts(item)
