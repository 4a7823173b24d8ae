"""Property-based tests: arbitrary input only ever meets the documented errors.

The schema policy returns problems (never raises), provider translations round-trip
any valid tool, the select request parser answers with field errors, and the body
loader raises nothing but ValueError.
"""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.formats import FORMATS, export_tools, import_tools
from catalog.schema_policy import (
    ArgumentCheck,
    SchemaProblem,
    check_tool_schema,
    validate_arguments,
)
from catalog.spec import ToolSpec
from config import jsonparse
from selection.api.serializers import SelectInputSerializer

FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
KEYWORDS = st.sampled_from(
    ["type", "properties", "items", "$ref", "allOf", "anyOf", "not", "pattern",
     "patternProperties", "additionalProperties", "enum", "required", "$defs",
     "minimum", "format", "if", "then", "$schema", "$anchor", "x"]
)  # fmt: skip
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
TEXT = st.text(max_size=12)
JSON = st.recursive(
    SCALARS | TEXT | st.sampled_from(["#", "#/$defs/a", "object", "(a+)+$", "(?=x)"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(KEYWORDS | TEXT, children, max_size=5)
    ),
    max_leaves=30,
)


@FAST
@given(JSON)
def test_any_parameters_value_gets_problems_never_an_exception(schema: Any) -> None:
    spec = ToolSpec(name="t", parameters=schema if isinstance(schema, dict) else None)
    problems = check_tool_schema(spec)
    assert all(isinstance(p, SchemaProblem) for p in problems)


@FAST
@given(st.dictionaries(KEYWORDS, JSON, max_size=5), JSON | TEXT)
def test_any_accepted_schema_checks_any_arguments_without_raising(
    body: dict[str, Any], arguments: Any
) -> None:
    schema = {**body, "type": "object"}
    spec = ToolSpec(name="t", parameters=schema)
    if check_tool_schema(spec):
        return
    if not isinstance(arguments, (dict, str)):
        arguments = {"value": arguments}
    check = validate_arguments(spec, arguments, key=json.dumps(schema, sort_keys=True))
    assert isinstance(check, ArgumentCheck)
    assert check.valid == (not check.errors)


NAMES = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_-]{0,30}", fullmatch=True)
PROPERTY = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "boolean"])},
    optional={"description": st.text(max_size=20)},
)
SCHEMAS = st.builds(
    lambda props, required: {
        "type": "object",
        "properties": props,
        **({"required": sorted(set(required) & set(props))} if required else {}),
    },
    st.dictionaries(NAMES, PROPERTY, max_size=4),
    st.lists(NAMES, max_size=3),
)
SPECS = st.builds(
    ToolSpec,
    name=NAMES,
    description=st.text(min_size=1, max_size=40).filter(str.strip),
    parameters=SCHEMAS,
    tags=st.lists(NAMES, max_size=3),
    cost_per_call=st.decimals(min_value=0, max_value=100, places=2).map(Decimal),
)


@FAST
@given(st.lists(SPECS, min_size=1, max_size=3, unique_by=lambda s: s.name))
def test_every_format_round_trips_any_valid_tool(specs: list[ToolSpec]) -> None:
    for fmt in FORMATS:
        first = export_tools(specs, fmt)
        items = import_tools(json.loads(json.dumps(first)), fmt)
        assert [item.error for item in items] == [None] * len(specs)
        back = [item.spec for item in items if item.spec is not None]
        assert export_tools(back, fmt) == first
        assert [s.name for s in back] == [s.name for s in specs]
        if fmt == "canonical":
            assert back == specs


@FAST
@given(JSON | st.dictionaries(st.sampled_from(list(SelectInputSerializer().fields)),
                              JSON, max_size=6))  # fmt: skip
def test_the_select_parser_answers_any_json_with_a_verdict(data: Any) -> None:
    serializer = SelectInputSerializer(data=data)
    if serializer.is_valid():
        assert "max_candidates" in serializer.validated_data
    else:
        assert isinstance(serializer.errors, dict) and serializer.errors


@FAST
@given(st.text(alphabet='[]{}",:\\ a0\x00\ud800', max_size=200))
def test_the_body_loader_raises_only_value_errors(text: str) -> None:
    with contextlib.suppress(ValueError):
        jsonparse.loads(text, max_depth=8)
