"""The catalog version a caller reads depends only on what it can see.

Every answer an agent reads is walked for what names a version or a time (any
key holding "version", "updated", "cursor" or "etag", and the ETag and
Last-Modified headers): /select and its batch, tool-calls/validate, /validate,
the catalogs API, the tool list, the export, the MCP search and details (the
gateway's own services, as /mcp runs them) and the console's catalogs page.
No change a reader cannot see moves any of it, whichever path made it (an
edit, a status change, a deletion, a new tool, a bulk import, new roles that
still hide it); every change it can see moves it, never down; a reader of every
tool reads the catalog's own version; and the answer cache never serves an
answer from before a visible change."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from catalog.formats import ImportItem
from catalog.models import Catalog, Tool
from catalog.services import delete_tool, set_tool_status, update_tool
from catalog.services.bulk_import import import_chunk
from catalog.services.tools import tool_to_spec
from gateway import refusals
from gateway import services as mcp
from identity.models import ApiClient
from tests.factories import make_client_key, make_tool, make_user

pytestmark = pytest.mark.django_db

CALL = {
    "type": "function_call",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
    "call_id": "c1",
}
SELECT = {"query": "weather in Paris", "scorer": "keyword"}
MARKED = re.compile(r"version|updated|cursor|etag", re.I)


@pytest.fixture
def tools(db) -> dict[str, Tool]:
    return {
        "weather": make_tool(name="get_weather", description="Weather for a city."),
        "article": make_tool(name="help_article", allowed_roles=["support"]),
        "wipe": make_tool(name="wipe_disk", safe=False),
        "refund": make_tool(name="refund_payment", allowed_roles=["billing"]),
    }


@pytest.fixture
def agent(tools) -> APIClient:
    """A support agent: not offered unsafe tools nor billing's."""
    api = APIClient()
    key = make_client_key("support-bot", "agent", roles=["support"])
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


@pytest.fixture
def person(tools, client) -> Any:
    """A signed-in person without a scope group: an agent's view of the console."""
    client.force_login(make_user("pat"))
    return client


def marked(value: Any, path: str = "") -> dict[str, Any]:
    """Every value under a key that names a version, a time or a cursor."""
    found: dict[str, Any] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if MARKED.search(str(key)):
                found[where] = item
            found.update(marked(item, where))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.update(marked(item, f"{path}[{i}]"))
    return found


def headers(response: Any) -> dict[str, str]:
    return {k: response[k] for k in ("ETag", "Last-Modified") if response.has_header(k)}


def read_by(agent: APIClient) -> dict[str, Any]:
    """What names a version or a time in everything the agent reads."""
    user = ApiClient.objects.get(name="support-bot").user
    reads = {
        "select": agent.post("/api/v1/select", SELECT, format="json"),
        "batch": agent.post(
            "/api/v1/select/batch", {"requests": [SELECT]}, format="json"
        ),
        "calls": agent.post(
            "/api/v1/tool-calls/validate", {"output": CALL}, format="json"
        ),
        "validate": agent.post(
            "/api/v1/validate",
            {"tool": "get_weather", "arguments": {"city": "Paris"}},
            format="json",
        ),
        "catalogs": agent.get("/api/v1/catalogs/"),
        "catalog": agent.get("/api/v1/catalogs/default/"),
        "tools": agent.get("/api/v1/tools/"),
        "export": agent.get("/api/v1/catalogs/default/export?format=mcp"),
    }
    seen: dict[str, Any] = {}
    for name, response in reads.items():
        assert response.status_code == 200, (name, response.content)
        seen[name] = {**marked(response.json()), **headers(response)}
    # The MCP tools' own work, without the connection hygiene of a gateway
    # thread (which would close this test's transaction).
    asked = {"query": SELECT["query"]}
    attempt = refusals.Attempt(user, uuid.uuid4(), "tools/call", "search_tools", asked)
    seen["mcp search"] = marked(mcp._search(attempt, asked))
    names = {"names": ["get_weather", "help_article"]}
    seen["mcp details"] = marked(mcp._details(user, names))
    return seen


def page_numbers(person: Any) -> list[str]:
    """The console's catalogs page: its counts and the catalog's version."""
    page = person.get("/catalogs/").content.decode()
    return re.findall(r'<td class="num">(\d+)</td>', page)


def edit(tool: Tool, **fields: Any) -> None:
    spec = tool_to_spec(tool)
    for name, value in fields.items():
        setattr(spec, name, value)
    update_tool(Tool.objects.get(pk=tool.pk), spec, actor=None)


def bulk(tool: Tool, **fields: Any) -> None:
    spec = tool_to_spec(tool)
    for name, value in fields.items():
        setattr(spec, name, value)
    with transaction.atomic():
        import_chunk(tool.catalog, [ImportItem(0, spec, None)], actor=None)


HIDDEN_CHANGES: dict[str, Callable[[dict[str, Tool]], object]] = {
    "an unsafe tool's description": lambda t: edit(t["wipe"], description="Gone."),
    "a role-hidden tool's description": lambda t: edit(
        t["refund"], description="Refund a card payment by its id."
    ),
    "a hidden tool's status": lambda t: set_tool_status(
        t["refund"], "disabled", actor=None
    ),
    "a hidden tool's deletion": lambda t: delete_tool(t["wipe"], actor=None),
    "a new hidden tool": lambda t: make_tool(
        name="payroll_run", allowed_roles=["finance"]
    ),
    "a hidden tool's bulk import": lambda t: bulk(t["refund"], description="Bulk."),
    "new roles that still hide it": lambda t: edit(
        t["refund"], allowed_roles=["finance"]
    ),
}


@pytest.mark.parametrize("change", HIDDEN_CHANGES, ids=list(HIDDEN_CHANGES))
def test_a_change_the_agent_cannot_see_moves_nothing_it_reads(
    tools, agent, person, change
):
    before, page = read_by(agent), page_numbers(person)
    version = Catalog.objects.get(slug="default").version
    HIDDEN_CHANGES[change](tools)
    assert Catalog.objects.get(slug="default").version > version  # it did change
    assert read_by(agent) == before
    assert page_numbers(person) == page


def versions_read(agent: APIClient) -> set[int]:
    seen = read_by(agent)
    found = {
        seen["select"][".catalog_version"],
        seen["batch"][".results[0].catalog_version"],
        seen["calls"][".catalog_version"],
        seen["catalog"][".version"],
    }
    assert len(found) == 1, seen  # one version, wherever it is read
    return found


VISIBLE_CHANGES: dict[str, Callable[[dict[str, Tool]], object]] = {
    "a visible tool's edit": lambda t: edit(t["weather"], description="Forecasts."),
    "a hidden tool made visible": lambda t: edit(t["refund"], allowed_roles=[]),
    "a visible tool hidden": lambda t: edit(t["article"], safe=False),
    "a visible tool's deletion": lambda t: delete_tool(t["article"], actor=None),
    "a new visible tool": lambda t: make_tool(name="get_time"),
    "a visible tool's bulk import": lambda t: bulk(t["article"], description="B."),
}


@pytest.mark.parametrize("change", VISIBLE_CHANGES, ids=list(VISIBLE_CHANGES))
def test_a_change_the_agent_can_see_moves_its_version_to_the_catalogs(
    tools, agent, change
):
    HIDDEN_CHANGES["an unsafe tool's description"](tools)
    [before] = versions_read(agent)
    assert before < Catalog.objects.get(slug="default").version
    VISIBLE_CHANGES[change](tools)
    assert versions_read(agent) == {Catalog.objects.get(slug="default").version}


def test_the_version_an_agent_reads_never_goes_down(tools, agent):
    steps = [
        lambda: edit(tools["weather"], description="One."),
        lambda: edit(tools["wipe"], description="Two."),
        lambda: edit(tools["article"], allowed_roles=["billing"]),  # hidden now
        lambda: edit(tools["refund"], description="Three."),
        lambda: delete_tool(tools["wipe"], actor=None),
    ]
    read = [min(versions_read(agent))]
    for step in steps:
        step()
        read.append(min(versions_read(agent)))
    assert read == sorted(read)
    assert read[1] < read[3] and read[3] == read[4] == read[5]


def test_a_reader_of_every_tool_reads_the_catalogs_own_version(tools, agent):
    HIDDEN_CHANGES["an unsafe tool's description"](tools)
    curator = APIClient()
    curator.credentials(HTTP_AUTHORIZATION=f"Bearer {make_client_key('c', 'curator')}")
    version = Catalog.objects.get(slug="default").version
    assert curator.get("/api/v1/catalogs/default/").json()["version"] == version
    answer = curator.post("/api/v1/select", SELECT, format="json").json()
    assert answer["catalog_version"] == version


def test_the_answer_cache_moves_with_every_visible_change(tools, agent):
    first = agent.post("/api/v1/select", SELECT, format="json").json()
    again = agent.post("/api/v1/select", SELECT, format="json").json()
    assert again["cached"] is True
    edit(tools["weather"], description="Weather forecasts for a city, by day.")
    fresh = agent.post("/api/v1/select", SELECT, format="json").json()
    assert fresh["cached"] is False
    assert fresh["catalog_version"] > first["catalog_version"]
    [pick] = [t for t in fresh["tools"] if t["name"] == "get_weather"]
    assert "by day" in str(pick["definition"])


def test_the_agent_sees_the_weather_and_the_article_only(tools, agent):
    """The premise of every test here."""
    listed = agent.get("/api/v1/tools/").json()["results"]
    assert sorted(tool["name"] for tool in listed) == ["get_weather", "help_article"]
