"""POST /api/v1/tool-calls/validate: a model's tool calls, in any provider's shape,
decided against the catalog, the caller's access and the selection they answer."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from catalog.models import Tool
from catalog.services import create_catalog, update_tool
from catalog.services.tools import tool_to_spec
from identity.models import ApiClient
from tests.factories import make_tool, stored_past_the_rules
from tests.selection.test_tool_calls_parse import (
    mcp_request,
    ollama_message,
    openai_call,
    openai_response,
    responses_item,
    tool_use,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/tool-calls/validate"
GOOD = {"city": "Paris", "unit": "celsius"}
BAD = {"unit": "kelvin"}
UNPARSEABLE = '{"city": "Par'


def anthropic_message(arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [tool_use(arguments)]}


# Each provider's output, built around the arguments the model produced (the
# providers that send objects get a string when the arguments are unparseable).
SHAPES = {
    "openai": lambda args: openai_response(openai_call(_text(args))),
    "openai-responses": lambda args: {"output": [responses_item(_text(args))]},
    "anthropic": anthropic_message,
    "ollama": lambda args: {"model": "llama3", "message": ollama_message(args)},
    "mcp": mcp_request,
}


def _text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def stored_before_the_name_rules(name: str, **fields: Any) -> Tool:
    """A tool with a name new tools may no longer take (written past the rules)."""
    tool = make_tool(name="legacy_tool", **fields)
    return stored_past_the_rules(tool, name=name)


@pytest.fixture
def tools(db):
    return {
        "weather": make_tool(
            name="get_weather", description="Get the current weather for a city."
        ),
        "screenshot": stored_before_the_name_rules(
            "Website Screenshot / capture",
            provider_name="Website_Screenshot_capture",
            description="Capture a screenshot of a website.",
        ),
        "wipe": make_tool(name="wipe_disk", safe=False),
        "refund": make_tool(name="refund_payment", allowed_roles=["billing"]),
        "ping": make_tool(
            name="ping_server",
            parameters=None,
            allow_no_schema=True,
            no_schema_mode="read-only",
        ),
        "email": make_tool(name="send_email", requires_approval=True),
        "old": make_tool(name="old_lookup", status="disabled"),
    }


@pytest.fixture
def agent(with_key, tools):
    return with_key("agent", roles=["support"])


def check(client, output, **body):
    return client.post(URL, {"output": output, **body}, format="json")


def only_call(response):
    assert response.status_code == 200, response.json()
    calls = response.json()["calls"]
    assert len(calls) == 1
    return calls[0]


def select_weather(client, **options):
    body = {"query": "weather in Paris", "scorer": "keyword", "max_candidates": 1}
    response = client.post("/api/v1/select", {**body, **options}, format="json")
    assert response.status_code == 200, response.json()
    assert [t["name"] for t in response.json()["tools"]] == ["get_weather"]
    return response.json()["selection_id"]


@pytest.mark.parametrize("fmt", SHAPES)
def test_good_arguments_in_every_providers_shape_are_valid(agent, fmt):
    response = check(agent, SHAPES[fmt](GOOD))
    call = only_call(response)
    assert response.json()["format"] == fmt
    assert call["tool"] == "get_weather"
    assert call["valid"] is True
    assert call["flags"] == []
    assert call["errors"] == []
    assert call["arguments"] == GOOD
    assert call["hint"] == ""


@pytest.mark.parametrize("fmt", SHAPES)
def test_bad_arguments_in_every_shape_get_errors_and_a_repair_hint(agent, fmt):
    call = only_call(check(agent, SHAPES[fmt](BAD)))
    assert call["valid"] is False
    assert call["arguments"] is None
    found = {(e["pointer"], e["rule"]) for e in call["errors"]}
    assert found == {("", "required"), ("/unit", "enum")}
    assert "`city` is required" in call["hint"]
    assert "`unit` must be one of celsius, fahrenheit" in call["hint"]


@pytest.mark.parametrize("fmt", SHAPES)
def test_unparseable_arguments_in_every_shape_are_a_result_not_an_error(agent, fmt):
    call = only_call(check(agent, SHAPES[fmt](UNPARSEABLE)))
    assert call["valid"] is False
    assert call["flags"] == ["parse_error"]
    assert call["errors"][0]["rule"] == "parse"
    assert "JSON object" in call["hint"]


def test_call_ids_are_returned_and_several_calls_keep_their_order(agent):
    output = [openai_call(json.dumps(GOOD)), openai_call("{}", name="send_email")]
    output[1]["id"] = "call_2"
    calls = check(agent, output).json()["calls"]
    assert [(c["tool"], c["call_id"]) for c in calls] == [
        ("get_weather", "call_1"),
        ("send_email", "call_2"),
    ]


def test_a_provider_safe_name_maps_back_to_the_canonical_tool(agent, tools):
    provider_name = tools["screenshot"].provider_name
    assert provider_name == "Website_Screenshot_capture"
    call = only_call(check(agent, [openai_call(json.dumps(GOOD), provider_name)]))
    assert call["tool"] == "Website Screenshot / capture"
    assert call["valid"] is True


def test_an_unknown_tool_is_flagged_not_a_404(agent):
    call = only_call(check(agent, [openai_call(json.dumps(GOOD), "nope")]))
    assert call["flags"] == ["unknown_tool"]
    assert call["valid"] is False
    assert "`nope`" in call["hint"]


@pytest.mark.parametrize("hidden", ["wipe_disk", "refund_payment"])
def test_an_agent_cannot_tell_a_hidden_tool_from_a_missing_one(agent, hidden):
    def answer(name: str) -> dict[str, Any]:
        call = only_call(check(agent, [openai_call('{"bogus": 1}', name)]))
        return {
            k: v.replace(name, "NAME") if k == "hint" else v
            for k, v in call.items()
            if k != "tool"
        }

    assert answer(hidden) == answer("no_such_tool")
    assert answer(hidden)["flags"] == ["unknown_tool"]


def test_a_tool_the_caller_sees_but_may_never_call_is_not_allowed(with_key, tools):
    curator = with_key("curator", roles=["support"])
    call = only_call(check(curator, [openai_call("{}", "wipe_disk")]))
    assert "not_allowed" in call["flags"]
    assert "unsafe" in call["flags"]
    assert call["valid"] is False
    assert "unsafe" in call["hint"]


def test_a_disabled_tool_is_not_allowed(agent):
    call = only_call(check(agent, [openai_call(json.dumps(GOOD), "old_lookup")]))
    assert call["flags"] == ["not_allowed"]
    assert "not active" in call["hint"]


def test_an_unsafe_tool_the_caller_may_use_is_valid_and_flagged(with_key, tools):
    trusted = with_key("agent", allow_unsafe=True)
    call = only_call(check(trusted, [openai_call(json.dumps(GOOD), "wipe_disk")]))
    assert call["valid"] is True
    assert call["flags"] == ["unsafe"]


def test_a_tool_needing_approval_is_valid_and_flagged(agent):
    call = only_call(check(agent, [openai_call(json.dumps(GOOD), "send_email")]))
    assert call["valid"] is True
    assert call["flags"] == ["requires_approval"]


def test_a_no_schema_tool_is_flagged_as_not_validated(agent):
    request = mcp_request({"host": "db1"})
    request["params"]["name"] = "ping_server"
    call = only_call(check(agent, request, format="mcp"))
    assert call["valid"] is True
    assert call["flags"] == ["no_schema"]
    assert call["arguments"] == {"host": "db1"}


def test_a_call_the_linked_selection_offered_is_valid(agent):
    selection_id = select_weather(agent)
    response = check(agent, SHAPES["anthropic"](GOOD), selection_id=selection_id)
    call = only_call(response)
    assert call["valid"] is True
    assert call["flags"] == []
    assert response.json()["selection_id"] == selection_id


def test_a_visible_tool_the_selection_did_not_offer_is_not_offered(agent):
    selection_id = select_weather(agent)
    output = [openai_call(json.dumps(GOOD), "send_email")]
    call = only_call(check(agent, output, selection_id=selection_id))
    assert call["flags"] == ["not_offered", "requires_approval"]
    assert call["valid"] is False
    assert "not offered" in call["hint"]


def test_a_tool_the_selection_request_blocked_is_not_allowed(agent):
    selection_id = select_weather(agent, block_tools=["send_email"])
    output = [openai_call(json.dumps(GOOD), "send_email")]
    call = only_call(check(agent, output, selection_id=selection_id))
    assert call["flags"] == ["not_offered", "not_allowed", "requires_approval"]
    assert "blocked" in call["hint"]


def test_a_tool_changed_since_the_selection_is_stale(agent, tools):
    selection_id = select_weather(agent)
    weather = tools["weather"]
    spec = tool_to_spec(weather)
    spec.description = "Weather now, in any city."
    update_tool(weather, spec, actor=None)
    call = only_call(check(agent, SHAPES["openai"](GOOD), selection_id=selection_id))
    assert call["flags"] == ["stale_version"]
    assert call["tool_version"] == 2
    assert call["valid"] is True


def test_a_selection_records_each_picks_version_but_the_answer_keeps_its_shape(agent):
    selection_id = select_weather(agent)
    event = AuditEvent.objects.get(selection_id=selection_id)
    pick = event.output["tools"][0]
    weather = Tool.objects.get(name="get_weather")
    assert (pick["version"], pick["content_hash"]) == (1, weather.content_hash)
    again = agent.post(
        "/api/v1/select",
        {"query": "weather in Paris", "scorer": "keyword", "max_candidates": 1},
        format="json",
    ).json()
    assert "version" not in again["tools"][0]
    assert "_versions" not in again


def test_an_older_selection_without_versions_uses_the_change_history(agent, tools):
    old = record_event(
        EventType.SELECTION,
        actor=ApiClient.objects.get(
            name="agent-client"
        ).user,  # a selection is its maker's
        request_id=None,
        selection_id=uuid.uuid4(),
        catalog_slug="default",
        summary="before versions were recorded",
        input={"request": {"query": "weather"}},
        output={"tools": [{"name": "get_weather"}]},
    )
    selection_id = str(old.selection_id)
    body = SHAPES["openai"](GOOD)
    assert only_call(check(agent, body, selection_id=selection_id))["flags"] == []
    spec = tool_to_spec(tools["weather"])
    spec.description = "Changed after that selection."
    update_tool(tools["weather"], spec, actor=None)
    flags = only_call(check(agent, body, selection_id=selection_id))["flags"]
    assert flags == ["stale_version"]


def test_every_request_is_one_audit_event_linked_to_its_selection(agent):
    selection_id = select_weather(agent)
    output = [openai_call(json.dumps(GOOD)), openai_call("{", "send_email")]
    response = check(agent, output, selection_id=selection_id)
    events = AuditEvent.objects.filter(event_type=EventType.VALIDATION)
    assert events.count() == 1
    event = events.get()
    assert event.input["selection_id"] == selection_id
    assert event.output["selection_id"] == selection_id
    assert [c["name"] for c in event.input["calls"]] == ["get_weather", "send_email"]
    assert event.output["calls"] == response.json()["calls"]
    assert str(event.request_id) == response.json()["validation_id"]


def test_an_unknown_selection_id_is_a_404_naming_it(agent):
    response = check(agent, SHAPES["openai"](GOOD), selection_id=str(uuid.uuid4()))
    assert response.status_code == 404
    assert response.json()["detail"].startswith("selection_id:")


def test_a_selection_in_a_catalog_the_caller_may_not_see_is_a_404(with_key, tools):
    secret = create_catalog("secret", "Secret")
    make_tool(secret, name="get_weather", description="Get the current weather.")
    admin = with_key("admin", name="admin-client")
    response = admin.post(
        "/api/v1/select",
        {"catalog": "secret", "query": "weather", "scorer": "keyword"},
        format="json",
    )
    selection_id = response.json()["selection_id"]
    limited = with_key("agent", name="limited", catalogs=["default"])
    response = check(limited, SHAPES["openai"](GOOD), selection_id=selection_id)
    assert response.status_code == 404
    assert response.json()["detail"].startswith("selection_id:")
    assert not AuditEvent.objects.filter(event_type=EventType.VALIDATION).exists()


def test_a_selection_answers_calls_in_its_own_catalog_only(agent):
    create_catalog("other", "Other")
    selection_id = select_weather(agent)
    body = SHAPES["openai"](GOOD)
    response = check(agent, body, selection_id=selection_id, catalog="other")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("selection_id:")


def test_more_than_128_calls_are_refused_naming_the_output(agent):
    output = [mcp_request(GOOD, n) for n in range(129)]
    response = check(agent, output)
    assert response.status_code == 400
    assert response.json()["detail"].startswith("output:")
    assert "128" in response.json()["detail"]


def test_an_output_that_holds_no_tool_call_shape_is_a_400_naming_where(agent):
    response = check(
        agent,
        {
            "choices": [
                {
                    "message": {
                        "tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]
                    }
                }
            ]
        },
    )
    assert response.status_code == 400
    assert response.json()["detail"].startswith(
        "output.choices[0].message.tool_calls[0].function.name:"
    )


def test_a_message_without_tool_calls_is_valid_and_still_audited(agent):
    response = check(agent, {"role": "assistant", "content": "It is sunny."})
    assert response.status_code == 200
    assert response.json()["calls"] == []
    assert AuditEvent.objects.filter(event_type=EventType.VALIDATION).count() == 1


def test_it_requires_a_signed_in_caller(api, tools):
    response = check(api, SHAPES["openai"](GOOD))
    assert response.status_code in (401, 403)
    assert not AuditEvent.objects.filter(event_type=EventType.VALIDATION).exists()
