"""Every request field that is stored in an audit row (or a tool's definition) has
a bounded size: past it, a 400 naming the field and nothing is written (issue 20:
one 740 kB query stalled the audit chain for an hour)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from audit.choices import EventType
from audit.models import AuditEvent
from catalog.services.tools import check_spec
from catalog.sizes import MAX_STORED_CHARS, MAX_TOOL_CHARS, canonical_length
from selection.api.serializers import SelectInputSerializer
from tests.factories import make_spec, make_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(with_key):
    make_tool(name="get_weather")
    return with_key("agent")


def object_of(length: int) -> dict[str, str]:
    """A JSON object whose canonical JSON is exactly ``length`` characters."""
    value = {"k": ""}
    value["k"] = "x" * (length - canonical_length(value))
    assert canonical_length(value) == length
    return value


def answered() -> bool:
    """Whether a selection or a validation was recorded (making the tool is)."""
    kinds = [EventType.SELECTION, EventType.VALIDATION]
    return AuditEvent.objects.filter(event_type__in=kinds).exists()


def refused(response: Any, field: str) -> str:
    assert response.status_code == 400, response.content
    body = response.json()
    assert field in body["fields"], body
    return str(body["fields"][field])


def test_a_query_object_of_50000_keys_is_refused_naming_query(agent):
    query = {f"key{n}": n for n in range(50_000)}
    response = agent.post("/api/v1/select", {"query": query}, format="json")
    assert "at most 20000 characters" in refused(response, "query")
    assert not answered()


def test_an_object_query_is_held_to_the_string_limit_by_its_canonical_json():
    at_limit = SelectInputSerializer(data={"query": object_of(MAX_STORED_CHARS)})
    assert at_limit.is_valid(), at_limit.errors
    past = SelectInputSerializer(data={"query": object_of(MAX_STORED_CHARS + 1)})
    assert not past.is_valid()
    assert "query" in past.errors


def test_spaces_and_key_order_do_not_change_the_measure():
    """The canonical form is measured, not the bytes sent: padding cannot sneak
    past, and a pretty-printed body is not refused for its whitespace."""
    value = object_of(MAX_STORED_CHARS)
    assert canonical_length(dict(reversed(list(value.items())))) == MAX_STORED_CHARS


def test_characters_count_once_whatever_their_escape():
    """ "é" is one character, as in a string query, not the six of \\u00e9."""
    query = {"q": "é" * (MAX_STORED_CHARS - 10)}
    assert SelectInputSerializer(data={"query": query}).is_valid()


def test_a_long_conversation_is_refused_naming_messages(agent):
    messages = [{"role": "user", "content": "tell me the weather " * 50}] * 30
    response = agent.post("/api/v1/select", {"messages": messages}, format="json")
    assert "at most 20000 characters" in refused(response, "messages")
    assert not answered()


def test_many_small_messages_are_measured_together():
    messages = [{"role": "user", "content": "x" * 60}] * 400
    serializer = SelectInputSerializer(data={"messages": messages})
    assert not serializer.is_valid()
    assert "messages" in serializer.errors


def test_a_string_query_past_the_limit_is_still_refused(agent):
    response = agent.post(
        "/api/v1/select", {"query": "w" * (MAX_STORED_CHARS + 1)}, format="json"
    )
    refused(response, "query")


def test_a_batch_item_past_the_limit_is_refused_in_place_naming_query(agent):
    big = {"query": {f"key{n}": n for n in range(5_000)}}
    response = agent.post(
        "/api/v1/select/batch", {"requests": [big, big]}, format="json"
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["error"] for r in results] == ["invalid", "invalid"]
    assert "query" in results[0]["fields"]
    assert not answered()


@pytest.mark.parametrize(
    "arguments",
    [
        {"city": "P" * MAX_STORED_CHARS},
        '{"city": "' + "P" * MAX_STORED_CHARS + '"}',
    ],
    ids=["object", "string"],
)
def test_validate_refuses_arguments_past_the_limit_naming_them(agent, arguments):
    response = agent.post(
        "/api/v1/validate",
        {"tool": "get_weather", "arguments": arguments},
        format="json",
    )
    refused(response, "arguments")
    assert not answered()


def test_tool_calls_validate_refuses_an_output_past_the_limit_naming_it(agent):
    """One call (well under the 128 calls allowed) whose arguments are huge."""
    arguments = json.dumps({"city": "P" * MAX_TOOL_CHARS})
    call = {
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }
    output = {"role": "assistant", "tool_calls": [call]}
    response = agent.post(
        "/api/v1/tool-calls/validate", {"output": output}, format="json"
    )
    refused(response, "output")
    assert not answered()


def test_a_tool_whose_description_is_too_long_is_refused_naming_it(with_key):
    tool = {"name": "huge", "description": "d" * (MAX_TOOL_CHARS + 1)}
    response = with_key("curator").post("/api/v1/tools/", tool, format="json")
    refused(response, "description")


def test_a_tool_with_tags_past_the_limit_together_is_refused_naming_tags():
    tags = ["t" * 90] * 2_000
    with pytest.raises(ValidationError) as caught:
        check_spec(make_spec("many_tags", tags=tags))
    assert "tags" in caught.value.message_dict


def test_an_import_item_past_the_limit_is_refused_by_the_check_every_write_shares():
    """Imports, the console's form, the admin and the API all pass check_spec."""
    with pytest.raises(ValidationError) as caught:
        check_spec(make_spec("long_text", description="d" * (MAX_TOOL_CHARS + 1)))
    assert "description" in caught.value.message_dict
