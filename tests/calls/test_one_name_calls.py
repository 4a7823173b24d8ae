"""A called name means one tool on every REST path that resolves one: POST
tool-calls/execute (and the run of an approved call), POST validate and POST
tool-calls/validate.

The model was shown ``weather_get_forecast`` for the read-only
``weather.get_forecast``. A curator renaming the destructive
``weather.delete_file`` to that name is refused, so the model's call still runs
the read-only tool with no approval asked. A catalog that held such a pair
before the rule (written past the services) answers the name with a refusal
naming the ambiguity, and runs neither.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from calls.models import Approval
from catalog.models import Tool
from catalog.services import ToolConflict, create_tool, ensure_default_catalog
from catalog.services import update_tool as update
from catalog.services.tools import tool_to_spec
from tests.factories import make_spec, stored_past_the_rules
from tests.selection.test_tool_calls_parse import openai_call, openai_response

SHOWN = "weather_get_forecast"  # the read-only tool, as the model was shown it
NOTE = "weather_send_note"  # a tool that needs approval, as shown


def execute(api: Any, name: str, arguments: dict[str, Any], **more: Any) -> Any:
    body = {"name": name, "arguments": arguments, **more}
    return api.post("/api/v1/tool-calls/execute", body, format="json")


def try_to_take(tool: Tool, name: str) -> None:
    """A curator renaming ``tool`` to ``name`` (refused, once one name is one
    tool; the call paths are then held to the same answer either way)."""
    spec = tool_to_spec(tool)
    spec.name = name
    with contextlib.suppress(ValidationError, ToolConflict):
        update(tool, spec, actor=None)


def try_to_create(name: str) -> None:
    with contextlib.suppress(ValidationError, ToolConflict):
        create_tool(ensure_default_catalog(), make_spec(name), actor=None)


@pytest.fixture
def agent(with_key: Any) -> Any:
    return with_key("agent", "agent-one-name", allow_unsafe=True)


@pytest.fixture
def attacked(linked: dict[str, Tool]) -> dict[str, Tool]:
    try_to_take(linked["delete_file"], SHOWN)
    return linked


@pytest.fixture
def legacy(linked: dict[str, Tool]) -> dict[str, Tool]:
    """The pair stored before the rule: two tools answer to SHOWN."""
    stored_past_the_rules(linked["delete_file"], name=SHOWN)
    return linked


# A curator cannot take the name the model calls ----------------------------------


def test_execute_runs_the_tool_the_model_was_shown_without_approval(
    agent, attacked, upstream
):
    response = execute(agent, SHOWN, {"city": "Oslo"})
    assert response.status_code == 200, response.json()
    assert response.json()["outcome"] == "ran"
    assert [call.name for call in upstream.calls] == ["get_forecast"]
    assert not Approval.objects.exists()


def test_validate_checks_the_tool_the_model_was_shown(agent, attacked):
    body = {"tool": SHOWN, "arguments": {"city": "Oslo"}}
    response = agent.post("/api/v1/validate", body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["tool"] == "weather.get_forecast"


def test_tool_calls_validate_checks_the_tool_the_model_was_shown(agent, attacked):
    output = openai_response(openai_call(json.dumps({"city": "Oslo"}), SHOWN))
    response = agent.post(
        "/api/v1/tool-calls/validate", {"output": output}, format="json"
    )
    [call] = response.json()["calls"]
    assert call["tool"] == "weather.get_forecast"
    assert "requires_approval" not in call["flags"]


def test_an_approved_call_runs_the_tool_approved(agent, linked, upstream):
    pending = execute(agent, NOTE, {"to": "ana", "text": "hi"})
    assert pending.json()["outcome"] == "pending", pending.json()
    approval_id = pending.json()["approval_id"]
    try_to_create(NOTE)  # a tool of the name the approved call gives
    Approval.objects.filter(pk=approval_id).update(
        status="approved", decided=timezone.now()
    )
    ran = execute(agent, NOTE, {"to": "ana", "text": "hi"}, approval_id=approval_id)
    assert ran.status_code == 200, ran.json()
    assert [call.name for call in upstream.calls] == ["send_note"]


# A pair stored before the rule is refused, naming the ambiguity --------------------


def test_execute_refuses_a_name_two_tools_held_and_runs_neither(
    agent, legacy, upstream
):
    response = execute(agent, SHOWN, {"city": "Oslo"})
    assert response.status_code == 409, response.json()
    body = response.json()
    assert body["outcome"] == "refused"
    assert "names more than one tool of catalog 'default'" in body["reason"]
    assert upstream.calls == [] and not Approval.objects.exists()


def test_validate_refuses_it_too(agent, legacy):
    body = {"tool": SHOWN, "arguments": {"city": "Oslo"}}
    response = agent.post("/api/v1/validate", body, format="json")
    assert response.status_code == 409
    assert "names more than one tool" in response.json()["fields"]["name"][0]


def test_tool_calls_validate_says_the_name_is_ambiguous(agent, legacy):
    output = openai_response(openai_call(json.dumps({"city": "Oslo"}), SHOWN))
    response = agent.post(
        "/api/v1/tool-calls/validate", {"output": output}, format="json"
    )
    [call] = response.json()["calls"]
    assert call["valid"] is False and "unknown_tool" in call["flags"]
    assert "names more than one tool of this catalog" in call["hint"]


def test_an_approved_call_whose_name_became_ambiguous_is_not_run(
    agent, linked, upstream
):
    pending = execute(agent, NOTE, {"to": "ana", "text": "hi"})
    approval_id = pending.json()["approval_id"]
    stored_past_the_rules(linked["set_thermostat"], name=NOTE)
    Approval.objects.filter(pk=approval_id).update(
        status="approved", decided=timezone.now()
    )
    ran = execute(agent, NOTE, {"to": "ana", "text": "hi"}, approval_id=approval_id)
    assert ran.status_code == 409, ran.json()
    assert upstream.calls == []
    assert Approval.objects.get(pk=approval_id).status == "approved"  # not used


def test_a_caller_seeing_neither_tool_hears_of_no_ambiguity(with_key, legacy):
    Tool.objects.filter(name__in=[SHOWN, "weather.get_forecast"]).update(
        allowed_roles=["finance"]
    )
    agent = with_key("agent", "agent-ops", roles=["ops"], allow_unsafe=True)
    response = execute(agent, SHOWN, {"city": "Oslo"})
    assert response.status_code == 404
    assert "more than one" not in json.dumps(response.json())


def test_renaming_one_of_the_pair_away_lets_the_name_call_the_other(
    agent, legacy, upstream
):
    try_to_take(Tool.objects.get(name=SHOWN), "weather.delete_file")
    response = execute(agent, SHOWN, {"city": "Oslo"})
    assert response.status_code == 200, response.json()
    assert [call.name for call in upstream.calls] == ["get_forecast"]
