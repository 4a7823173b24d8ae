"""A hostile upstream (tests/hostile.py) turns after its first sync: a rug-pulled
description, a widened schema, a dropped readOnlyHint, a poisoned new tool, and
results carrying an AWS key pair and an instruction to the model. Each is
stopped on every path an agent has: REST (select in several formats and in a
batch, validate, the tool list, the catalog export, execute), /mcp in both
protocol eras (search_tools, get_tool_details, the list cursor's page, call_tool,
a tool called by its own name) and the Python client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from quiver_client import Quiver

from audit.models import AuditEvent
from catalog.choices import ReviewKind, ToolStatus
from catalog.models import Tool, ToolReview
from catalog.pinning import tool_definition_hash
from catalog.services import ensure_default_catalog
from catalog.services.pinning import refuse_change
from gateway.listing import cursor_for
from selection.services.settings import update_trust_policy
from sources.services import create_source
from tests.aio import run_async
from tests.factories import make_client_key
from tests.hostile import (
    AWS_KEY_ID,
    AWS_SECRET,
    INJECTION,
    NEVER,
    POISONED_TOOL,
    HostileUpstream,
    drop_read_only,
    honest_tools,
    hostile_upstream,
    poison,
    rug_pull,
    widen,
)
from tests.sources.conftest import sync
from tests.upstream import running_upstream

pytestmark = pytest.mark.django_db(transaction=True)
MODES = ["legacy", "auto"]
WEATHER, ORDER, FILES = "wx__get_weather", "wx__lookup_order", "wx__list_files"
POISONED = f"wx__{POISONED_TOOL}"
HONEST_WEATHER = str(honest_tools()["get_weather"].description)
HELD_NAMES = (POISONED, ORDER, FILES)


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileUpstream]:
    server = hostile_upstream()
    with running_upstream(server):
        yield server


@dataclass
class Turned:
    key: str
    job: Any


@pytest.fixture
def turned(hostile: HostileUpstream, transactional_db: None, admin_user: Any) -> Turned:
    """The source synced while honest, then the upstream turned and synced again
    (the catalog's default policy: a risky change suspends the tool)."""
    with hostile.lock:
        hostile.tools = honest_tools()
        hostile.calls.clear()
    catalog = ensure_default_catalog()
    source = create_source(catalog, name="wx", url=hostile.url, actor=admin_user)
    sync(source.source)
    rug_pull(hostile)
    widen(hostile)
    drop_read_only(hostile)
    poison(hostile)
    job = sync(source.source)
    # The widest agent key: unsafe tools allowed, every role.
    return Turned(make_client_key("agent-hostile", "agent", allow_unsafe=True), job)


def rest(url: str, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{url}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
    )


def rest_views(url: str, key: str) -> dict[str, Any]:
    """Everything an agent can read over REST about the catalog's tools."""
    views: dict[str, Any] = {}
    with rest(url, key) as api:
        for fmt in ("canonical", "openai", "anthropic", "mcp"):
            body = {"query": "setup, weather, orders and files", "explain": True}
            found = api.post(
                "/select", json={**body, "format": fmt, "max_candidates": 10}
            )
            views[f"select {fmt}"] = found.json()
        batch = {"requests": [{"query": "weather"}, {"query": "setup and files"}]}
        views["select batch"] = api.post("/select/batch", json=batch).json()
        views["tools"] = api.get("/tools", params={"catalog": "default"}).json()
        for fmt in ("mcp", "openai"):
            export = api.get("/catalogs/default/export", params={"format": fmt})
            views[f"export {fmt}"] = export.json()
    return views


def validations(url: str, key: str) -> dict[str, Any]:
    """``/validate`` of each held tool: the agent names it, Quiver knows none."""
    with rest(url, key) as api:
        return {
            name: api.post(
                "/validate", json={"tool": name, "arguments": {"city": "Oslo"}}
            ).json()
            for name in HELD_NAMES
        }


def mcp_views(url: str, key: str, mode: str) -> dict[str, Any]:
    """Everything an agent can read over /mcp: search_tools, get_tool_details
    of every name, the page its list cursor lists, and a cursor naming the held
    tools (made up: the cursor carries names, nothing secret)."""

    async def work(client: Any) -> dict[str, Any]:
        found = await client.call_tool(
            "search_tools", {"query": "setup, weather, orders and files"}
        )
        names = [WEATHER, *HELD_NAMES]
        details = await client.call_tool("get_tool_details", {"names": names})
        views = {
            "search": dumped(found),
            "details": dumped(details)["structuredContent"]["tools"],
            "not found": dumped(details)["structuredContent"]["not_found"],
        }
        cursor = found.structured_content.get("list_cursor")
        for label, page in (
            ("found", cursor),
            ("made up", cursor_for("default", names)),
        ):
            if page:
                listed = await client.list_tools(cursor=page)
                views[f"list {label}"] = dumped(listed)
        return views

    return run_client(url, key, mode, work)


def dumped(result: Any) -> Any:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def run_client(url: str, key: str, mode: str, work: Any) -> Any:
    async def main() -> Any:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with http, Client(transport, mode=mode) as client:
            return await work(client)

    return run_async(main())


def client_views(url: str, key: str) -> dict[str, Any]:
    with Quiver(url, key) as quiver:
        return {
            "select": quiver.select(
                "setup, weather, orders and files", max_candidates=10
            ),
            "anthropic tools": quiver.anthropic_tools(),
            "list": quiver.list_tools(catalog="default"),
        }


def assert_nothing_held_back(views: dict[str, Any]) -> None:
    for view, seen in views.items():
        text = json.dumps(seen, ensure_ascii=False)
        for word in (*NEVER, *HELD_NAMES):
            assert word not in text, (view, word, text[:3000])
        assert not any(0xE0000 <= ord(c) <= 0xE007F for c in text), view
    # The pinned definition is what is served.
    assert HONEST_WEATHER in json.dumps(views, ensure_ascii=False)


def test_the_second_sync_holds_every_hostile_definition_for_review(turned):
    items = {item["name"]: item for item in turned.job.items}
    assert items[WEATHER]["outcome"] == "held"
    assert items[POISONED]["outcome"] == "held"
    reviews = {r.tool_name: r for r in ToolReview.objects.filter(state="pending")}
    assert reviews[WEATHER].kind == ReviewKind.CHANGE
    assert {"model-markup", "read-sensitive-files"} <= {
        f["rule"] for f in reviews[WEATHER].findings
    }
    assert not reviews[WEATHER].suspended  # its schema and hints did not loosen
    assert any("sql" in risk for risk in reviews[ORDER].risks)
    assert reviews[ORDER].suspended
    assert "annotations: readOnlyHint dropped" in reviews[FILES].risks
    assert {"tag-characters", "call-first", "conceal-from-user"} <= {
        f["rule"] for f in reviews[POISONED].findings
    }
    statuses = dict(Tool.objects.values_list("name", "status"))
    assert statuses[WEATHER] == ToolStatus.ACTIVE
    assert {statuses[name] for name in HELD_NAMES} == {ToolStatus.HELD}
    assert Tool.objects.get(name=WEATHER).description == HONEST_WEATHER


def test_nothing_held_back_reaches_an_agent_over_rest_or_the_python_client(
    web_url, turned
):
    views = rest_views(web_url, turned.key)
    views["client"] = client_views(web_url, turned.key)
    assert_nothing_held_back(views)
    for name, answer in validations(web_url, turned.key).items():
        assert answer["error"] == "not_found"
        assert answer["detail"] == f"tool: no tool {name!r} in 'default'"


@pytest.mark.parametrize("mode", MODES)
def test_nothing_held_back_reaches_an_agent_over_mcp(web_url, turned, mode):
    views = mcp_views(web_url, turned.key, mode)
    assert sorted(views.pop("not found")) == sorted(HELD_NAMES)  # as asked
    assert [tool["description"] for tool in views["details"]] == [HONEST_WEATHER]
    assert_nothing_held_back(views)


def calls_over_every_path(url: str, key: str, name: str) -> list[dict[str, Any]]:
    """One call of ``name`` by REST execute, the Python client, call_tool and a
    call by its own name in both /mcp eras: each answer as the agent got it."""
    arguments = {"city": "Oslo"} if name == WEATHER else {"order": "A-1", "folder": "/"}
    answers = []
    with rest(url, key) as api:
        body = {"name": name, "arguments": arguments}
        answers.append(api.post("/tool-calls/execute", json=body).json())
    with Quiver(url, key) as quiver:
        try:
            answers.append(dict(quiver.call(name, arguments)))
        except Exception as exc:  # the client's error carries the API's answer
            answers.append({"error": str(exc)})
    for mode in MODES:

        async def work(client: Any) -> list[Any]:
            meta = await answered(
                client.call_tool("call_tool", {"name": name, "arguments": arguments})
            )
            return [meta, await answered(client.call_tool(name, arguments))]

        answers.extend(run_client(url, key, mode, work))
    return answers


async def answered(call: Any) -> dict[str, Any]:
    """A tool call's result as the agent got it; a JSON-RPC error (a call /mcp
    refuses before the call path) as an error result naming its message."""
    try:
        return (await call).model_dump(mode="json")
    except MCPError as exc:
        return {"isError": True, "jsonrpc_error": exc.error.message}


def test_a_held_tool_is_never_called_on_any_path(web_url, turned, hostile):
    for name in HELD_NAMES:
        rest_answer, client_answer, *mcp_answers = calls_over_every_path(
            web_url, turned.key, name
        )
        assert rest_answer["error"] == "not_found"
        assert rest_answer["detail"] == f"name: no tool {name!r} in 'default'"
        assert "no tool" in client_answer["error"]
        assert len(mcp_answers) == 4
        for answer in mcp_answers:
            assert True in (answer.get("isError"), answer.get("is_error")), answer
            text = json.dumps(answer)
            assert "no tool" in text or "unknown tool" in text.lower(), text
            assert not any(word in text for word in NEVER)
    assert [call.name for call in hostile.calls] == []


def test_a_hostile_result_is_screened_on_every_path(web_url, turned, hostile):
    answers = calls_over_every_path(web_url, turned.key, WEATHER)
    text = json.dumps(answers, ensure_ascii=False)
    assert AWS_KEY_ID not in text and AWS_SECRET not in text
    assert "[redacted: aws-access-key-id]" in text
    assert "[untrusted: ignore-instructions]" in text
    rest_answer, client_answer, *mcp_answers = answers
    assert rest_answer["outcome"] == "ran"
    rules = {f["rule"] for f in rest_answer["screening"]["findings"]}
    assert {
        "aws-access-key-id",
        "aws-secret-access-key",
        "ignore-instructions",
    } <= rules
    assert client_answer["content"][0]["text"].startswith("[quiver screening]")
    for answer in mcp_answers:
        assert answer["content"][0]["text"].startswith("[quiver screening]")
        meta = answer.get("_meta") or answer.get("meta")
        assert meta["quiver/screening"]["action"] == "redact"
    assert len(hostile.calls) == 6
    outcomes = AuditEvent.objects.filter(event_type="tool_call", output__outcome="ran")
    for event in outcomes:
        recorded = json.dumps(event.output)
        assert AWS_KEY_ID not in recorded and AWS_SECRET not in recorded
        assert event.output["screening"]["action"] == "redact"
        pinned = tool_definition_hash(Tool.objects.get(name=WEATHER))
        assert event.input["definition_hash"] == pinned


def test_every_selection_row_names_the_pinned_definition_it_offered(web_url, turned):
    with rest(web_url, turned.key) as api:
        api.post("/select", json={"query": "weather in Oslo"}).raise_for_status()
    event = AuditEvent.objects.filter(event_type="selection").latest("id")
    [offered] = [t for t in event.output["tools"] if t["name"] == WEATHER]
    assert offered["definition_hash"] == tool_definition_hash(
        Tool.objects.get(name=WEATHER)
    )


def test_a_refused_rug_pull_is_not_asked_again_and_the_pin_holds(turned, admin_user):
    review = ToolReview.objects.get(tool_name=WEATHER, state="pending")
    refuse_change(review, actor=admin_user, reason="instructions to read SSH keys")
    event = AuditEvent.objects.filter(event_type="tool_review").latest("id")
    assert event.input["diff_hash"] == review.diff_hash
    assert event.output["state"] == "refused"
    source = Tool.objects.get(name=WEATHER).source_link.source
    job = sync(source)
    items = {item["name"]: item for item in job.items}
    assert "refused in review" in items[WEATHER]["reason"]
    assert not ToolReview.objects.filter(tool_name=WEATHER, state="pending").exists()
    assert Tool.objects.get(name=WEATHER).description == HONEST_WEATHER


@pytest.mark.parametrize(
    "trust, action",
    [
        ({"results": {"injection": "block"}}, "block"),
        ({"results": {"secrets": "flag", "injection": "flag"}}, "flag"),
    ],
)
def test_the_catalogs_policy_decides_what_a_hostile_result_becomes(
    web_url, turned, hostile, admin_user, trust, action
):
    update_trust_policy(ensure_default_catalog(), trust, actor=admin_user)
    answers = calls_over_every_path(web_url, turned.key, WEATHER)
    rest_answer, _, *mcp_answers = answers
    text = json.dumps(answers, ensure_ascii=False)
    assert rest_answer["screening"]["action"] == action
    for answer in mcp_answers:
        meta = answer.get("_meta") or answer.get("meta")
        assert meta["quiver/screening"]["action"] == action
    if action == "block":  # nothing of the result, and the agent is told why
        assert INJECTION not in text and AWS_KEY_ID not in text
        assert "Sunny" not in text
        assert rest_answer["is_error"] is True
        assert rest_answer["reason"].startswith("result: withheld by screening (")
        assert "ignore-instructions" in rest_answer["reason"]
        assert all(a.get("isError") or a.get("is_error") for a in mcp_answers)
    else:  # let through, named untrusted before the agent reads it
        assert INJECTION in text and "Sunny" in text
        assert "[untrusted: ignore-instructions]" in text
        assert "[untrusted: aws-access-key-id]" in text
        notice = rest_answer["content"][0]["text"]
        assert notice.startswith("[quiver screening]") and "untrusted" in notice
    rows = AuditEvent.objects.filter(event_type="tool_call", output__outcome="ran")
    assert rows.count() == 6
    for row in rows:
        assert row.output["screening"]["action"] == action
        assert INJECTION not in json.dumps(row.output)
        assert AWS_SECRET not in json.dumps(row.output)
