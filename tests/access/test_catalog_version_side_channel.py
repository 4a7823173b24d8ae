"""An accepted side channel, pinned: an edit to a tool an agent cannot see moves
the ``catalog_version`` that agent sees (in its selections, tool-call checks and
the catalog's record) by one, and tells it nothing else — no name, no count of
tools, no field. docs/explanation/security.md says why this is accepted: the
version names the one catalog snapshot every answer and audit row was computed
from, for every caller alike."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from catalog.models import Catalog
from catalog.services import delete_tool, update_tool
from catalog.services.tools import tool_to_spec
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db

CALL = {
    "type": "function_call",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
    "call_id": "c1",
}


@pytest.fixture
def tools(db) -> dict[str, Any]:
    return {
        "weather": make_tool(name="get_weather", description="Weather for a city."),
        "wipe": make_tool(name="wipe_disk", safe=False),
        "refund": make_tool(name="refund_payment", allowed_roles=["billing"]),
    }


@pytest.fixture
def agent() -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_client_key('bot', 'agent')}")
    return api


def seen_by(agent: APIClient) -> dict[str, Any]:
    """Everything an agent reads that carries the catalog's version."""
    body = {"query": "weather in Paris", "scorer": "keyword"}
    selection = agent.post("/api/v1/select", body, format="json").json()
    check = agent.post(
        "/api/v1/tool-calls/validate", {"output": CALL}, format="json"
    ).json()
    record = agent.get("/api/v1/catalogs/default/").json()
    return {
        "versions": {
            selection["catalog_version"],
            check["catalog_version"],
            record["version"],
        },
        "picks": [tool["name"] for tool in selection["tools"]],
        "tool_count": record.get("tool_count"),
        "text": f"{selection}{check}{record}",
    }


def edit(tool: Any, description: str) -> None:
    spec = tool_to_spec(tool)
    spec.description = description
    update_tool(tool, spec, actor=None)


@pytest.mark.parametrize("hidden", ["wipe", "refund"])
def test_a_hidden_tools_edit_moves_the_version_an_agent_sees_by_one(
    tools, agent, hidden
):
    before = seen_by(agent)
    [version] = before["versions"]
    edit(tools[hidden], "Changed where the agent cannot look.")
    after = seen_by(agent)
    assert after["versions"] == {version + 1}
    assert Catalog.objects.get(slug="default").version == version + 1


@pytest.mark.parametrize("hidden", ["wipe", "refund"])
def test_nothing_but_the_version_tells_of_the_hidden_edit(tools, agent, hidden):
    before = seen_by(agent)
    edit(tools[hidden], "Changed where the agent cannot look.")
    after = seen_by(agent)
    assert after["picks"] == before["picks"]
    assert after["tool_count"] == before["tool_count"]
    for text in (before["text"], after["text"]):
        assert "wipe_disk" not in text
        assert "refund_payment" not in text
        assert "cannot look" not in text


def test_a_hidden_tools_deletion_moves_it_too_and_names_nothing(tools, agent):
    [version] = seen_by(agent)["versions"]
    delete_tool(tools["wipe"], actor=None)
    after = seen_by(agent)
    assert after["versions"] == {version + 1}
    assert "wipe_disk" not in after["text"]


def test_every_caller_sees_the_same_version(tools, agent):
    """One version per catalog, not one per reader: the agent's and a curator's
    answers name the same snapshot, so their audit rows compare."""
    edit(tools["wipe"], "Changed.")
    curator = APIClient()
    secret = make_client_key("keeper", "curator")
    curator.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert seen_by(agent)["versions"] == seen_by(curator)["versions"]
