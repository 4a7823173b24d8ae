"""selection.toolcalls.parse and .hints: every provider's shape, no database."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from selection.toolcalls.hints import join_hints, schema_hints
from selection.toolcalls.parse import MAX_CALLS, ShapeError, parse_tool_calls
from tests.factories import weather_schema

GOOD = {"city": "Paris", "unit": "celsius"}


def openai_call(arguments: Any, name: str = "get_weather") -> dict[str, Any]:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def openai_response(*calls: dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": list(calls)}
    return {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}


def responses_item(arguments: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_9",
        "name": "get_weather",
        "arguments": arguments,
    }


def tool_use(arguments: Any) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "get_weather",
        "input": arguments,
    }


def ollama_message(arguments: Any) -> dict[str, Any]:
    call = {"function": {"name": "get_weather", "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def mcp_request(arguments: Any, request_id: Any = 7) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "get_weather", "arguments": arguments},
    }


SHAPES = {
    "openai response": (openai_response(openai_call(json.dumps(GOOD))), "openai"),
    "openai message": (
        openai_response(openai_call(json.dumps(GOOD)))["choices"][0]["message"],
        "openai",
    ),
    "openai tool_calls list": ([openai_call(json.dumps(GOOD))], "openai"),
    "responses response": (
        {
            "object": "response",
            "output": [{"type": "reasoning"}, responses_item(json.dumps(GOOD))],
        },
        "openai-responses",
    ),
    "responses item": (responses_item(json.dumps(GOOD)), "openai-responses"),
    "anthropic message": (
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}, tool_use(GOOD)],
        },
        "anthropic",
    ),
    "anthropic blocks": ([tool_use(GOOD)], "anthropic"),
    "ollama response": ({"model": "llama3", "message": ollama_message(GOOD)}, "ollama"),
    "ollama message": (ollama_message(GOOD), "ollama"),
    "mcp request": (mcp_request(GOOD), "mcp"),
    "mcp requests": ([mcp_request(GOOD), mcp_request(GOOD, 8)], "mcp"),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_provider_shape_is_detected_and_its_arguments_decoded(shape):
    document, fmt = SHAPES[shape]
    parsed = parse_tool_calls(document)
    assert parsed.format == fmt
    assert parsed.calls, shape
    for call in parsed.calls:
        assert call.name == "get_weather"
        assert call.arguments == GOOD
        assert call.parse_error == ""


def test_call_ids_come_from_each_providers_own_field():
    assert parse_tool_calls([openai_call("{}")]).calls[0].call_id == "call_1"
    assert parse_tool_calls(responses_item("{}")).calls[0].call_id == "call_9"
    assert parse_tool_calls(tool_use({})).calls[0].call_id == "toolu_1"
    assert parse_tool_calls(mcp_request({}, 42)).calls[0].call_id == "42"
    assert parse_tool_calls(ollama_message({})).calls[0].call_id is None


@pytest.mark.parametrize(
    "document",
    [
        openai_response(openai_call('{"city": "Paris"')),
        responses_item("not json"),
        [openai_call('{"city": "a", "city": "b"}')],
        tool_use("[1, 2]"),
        [openai_call("NaN")],
    ],
    ids=["truncated", "prose", "duplicate key", "not an object", "nan"],
)
def test_unparseable_arguments_are_carried_as_a_problem_not_raised(document):
    call = parse_tool_calls(document).calls[0]
    assert call.arguments is None
    assert call.parse_error


def test_a_missing_arguments_member_is_a_parse_problem_except_for_mcp():
    entry = {"id": "c", "function": {"name": "get_weather"}}
    assert parse_tool_calls([entry]).calls[0].parse_error == "arguments are missing"
    bare = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
    assert parse_tool_calls(bare).calls[0].arguments == {}


def test_a_message_without_tool_calls_has_no_calls():
    parsed = parse_tool_calls({"role": "assistant", "content": "It is sunny."})
    assert parsed.calls == ()
    assert parsed.format == "none"


def test_an_explicit_format_must_fit_the_calls():
    with pytest.raises(ShapeError) as raised:
        parse_tool_calls(tool_use(GOOD), "mcp")
    assert raised.value.field == "output"
    assert "anthropic" in raised.value.rule


def test_an_explicit_format_settles_openai_against_ollama():
    parsed = parse_tool_calls(ollama_message(GOOD), "openai")
    assert parsed.calls[0].format == "openai"


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ("just text", "output"),
        ({"hello": "world"}, "output"),
        ([openai_call("{}", name="")], "output[0].function.name"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "output.method"),
        ({"choices": []}, "output.choices"),
        ([1], "output[0]"),
    ],
)
def test_a_shape_that_is_not_tool_calls_names_where_it_failed(document, field):
    with pytest.raises(ShapeError) as raised:
        parse_tool_calls(document)
    assert raised.value.field == field


def test_more_than_the_limit_of_calls_is_refused():
    with pytest.raises(ShapeError) as raised:
        parse_tool_calls([mcp_request({}, n) for n in range(MAX_CALLS + 1)])
    assert raised.value.field == "output"
    assert str(MAX_CALLS) in raised.value.rule
    assert (
        len(parse_tool_calls([mcp_request({}, n) for n in range(MAX_CALLS)]).calls)
        == MAX_CALLS
    )


def hints_for(
    arguments: dict[str, Any], schema: dict[str, Any] | None = None
) -> list[str]:
    validator = Draft202012Validator(schema or weather_schema())
    return schema_hints(validator.iter_errors(arguments))


def test_hints_name_the_argument_and_what_it_must_be():
    assert hints_for({}) == ["`city` is required"]
    assert hints_for({"city": "x", "unit": "kelvin"}) == [
        "`unit` must be one of celsius, fahrenheit"
    ]
    assert hints_for({"city": 3}) == ["`city` must be a string"]


def test_hints_reach_nested_arguments_and_unexpected_ones():
    schema = {
        "type": "object",
        "properties": {
            "stops": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}},
                },
            }
        },
        "additionalProperties": False,
    }
    found = hints_for({"stops": [{}], "speed": 3}, schema)
    assert "`stops[0].name` is required" in found
    assert "`speed` is not an argument of this tool" in found


def test_joined_hints_are_short_and_without_repeats():
    assert join_hints(["a", "a", "b", "c", "d"]) == "a; b; c"
    assert join_hints([]) == ""
