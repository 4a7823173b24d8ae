"""POST /api/v1/validate and POST /api/v1/tool-calls/validate answer one tool's
call by the same rule: a tool the caller sees but may never call is
``not_allowed`` (never valid) on both, and one it may call is valid on both."""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit.choices import EventType
from audit.models import AuditEvent
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

ARGS = {"city": "Paris"}


def both(client: Any, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The single-call answer and the tool-calls answer's only call."""
    single = client.post(
        "/api/v1/validate", {"tool": name, "arguments": ARGS}, format="json"
    )
    assert single.status_code == 200, single.content
    call = {"id": "c1", "type": "function",
            "function": {"name": name, "arguments": json.dumps(ARGS)}}  # fmt: skip
    output = {"choices": [{"message": {"tool_calls": [call]}}]}
    many = client.post("/api/v1/tool-calls/validate", {"output": output}, format="json")
    assert many.status_code == 200, many.content
    return single.json(), many.json()["calls"][0]


@pytest.fixture
def tools() -> None:
    make_tool(name="get_weather")
    make_tool(name="old_lookup", status="disabled")
    make_tool(name="wipe_disk", safe=False)
    make_tool(name="refund_payment", allowed_roles=["billing"])


@pytest.mark.parametrize(
    ("name", "hint"),
    [("old_lookup", "not active"), ("wipe_disk", "unsafe")],
)
def test_a_tool_the_caller_may_never_call_is_not_allowed_on_both(
    with_key: Any, tools: None, name: str, hint: str
) -> None:
    single, call = both(with_key("curator"), name)
    assert single["valid"] is False
    assert call["valid"] is False
    assert "not_allowed" in single["flags"]
    assert single["flags"] == call["flags"]
    assert hint in single["hint"]
    assert single["arguments"] is None


def test_a_disabled_tool_is_not_allowed_for_an_agent_too(
    with_key: Any, tools: None
) -> None:
    single, call = both(with_key("agent"), "old_lookup")
    assert single["valid"] is call["valid"] is False
    assert single["flags"] == call["flags"] == ["not_allowed"]


def test_the_refusal_is_recorded_as_invalid(with_key: Any, tools: None) -> None:
    both(with_key("agent"), "old_lookup")
    checks = AuditEvent.objects.filter(event_type=EventType.VALIDATION)
    single = checks.filter(input__tool="old_lookup").get()
    assert single.output["valid"] is False
    assert single.summary == "old_lookup: invalid"


def test_a_tool_the_caller_may_call_is_valid_on_both(
    with_key: Any, tools: None
) -> None:
    single, call = both(with_key("agent"), "get_weather")
    assert single["valid"] is call["valid"] is True
    assert single["flags"] == call["flags"] == []
    assert single["hint"] == ""


def test_a_tool_hidden_from_the_caller_is_not_found_by_validate(
    with_key: Any, tools: None
) -> None:
    agent = with_key("agent", roles=["support"])
    response = agent.post(
        "/api/v1/validate", {"tool": "refund_payment", "arguments": {}}, format="json"
    )
    assert response.status_code == 404
