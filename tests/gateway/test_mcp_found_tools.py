"""What a client needs to call a tool search_tools found: its arguments in the
answer's text (for models that read only text), and what a plain official
client pays to call it by its own name. Without the search's list_cursor the
SDK lists tools again after each call (to find the tool's output schema, which
is never there); with that page listed once, each call is one exchange. The
cursor lists only tools the key may see, and one the server never gave is an
invalid-params error."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from audit.models import AuditEvent
from catalog.services import ensure_default_catalog
from catalog.services.catalogs import create_catalog
from gateway.listing import cursor_for
from tests.aio import run_async
from tests.factories import embed_now, make_client_key, make_tool
from tests.upstream import Upstream

MODES = ["legacy", "auto"]
FORECAST = "weather_get_forecast"  # the name search_tools answers
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def upstream(upstream: Upstream) -> Upstream:
    """The linked upstream (tests/gateway/conftest.py), its tools embedded."""
    embed_now(ensure_default_catalog())
    return upstream


def run_client(url: str, key: str, mode: str, work: Any) -> tuple[Any, list[str]]:
    """``work(client)``'s answer and the JSON-RPC methods of the requests it
    sent (notifications, such as the handshake's last, are not requests)."""
    sent: list[str] = []

    async def count(request: Any) -> None:
        method = json.loads(request.content or b"{}").get("method", "(answer)")
        if not method.startswith("notifications/"):
            sent.append(method)

    async def main() -> Any:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
            event_hooks={"request": [count]},
        )
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with http, Client(transport, mode=mode) as client:
            sent.clear()  # the handshake or discovery is not the calls' cost
            return await work(client)

    return run_async(main()), sent


async def search(client: Any) -> dict[str, Any]:
    found = await client.call_tool("search_tools", {"query": "weather forecast"})
    assert not found.is_error, found.content
    assert found.structured_content["tools"][0]["name"] == FORECAST
    return found.structured_content


def test_the_search_text_gives_each_tool_its_arguments_and_how_to_call_it(
    web_url, upstream
):
    key = make_client_key("agent-text", "agent")

    async def work(client):
        arguments = {"query": "weather forecast", "max_results": 2}
        return await client.call_tool("search_tools", arguments)

    found, _ = run_client(web_url, key, "legacy", work)
    lines = found.content[0].text.splitlines()
    [first, *_] = found.structured_content["tools"]
    assert lines[0].startswith(f"selection {found.structured_content['selection_id']}")
    assert lines[1].startswith(f"- {FORECAST} (")
    schema = json.loads(lines[3].removeprefix("  arguments: "))
    assert schema == first["inputSchema"]
    assert schema["required"] == ["city"]
    assert lines[-1].startswith(
        "Call one with call_tool {name, arguments, selection_id}"
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_pending_call_names_its_approval_in_the_text_a_model_reads(
    web_url, upstream, mode
):
    """Most frameworks hand the model an error result's text only."""
    key = make_client_key("agent-pending-text", "agent")
    call = {"name": "weather_delete_file", "arguments": {"path": "/srv/a.log"}}

    async def work(client):
        by_meta_tool = await client.call_tool("call_tool", call)
        by_name = await client.call_tool(call["name"], call["arguments"])
        return by_meta_tool, by_name

    results, _ = run_client(web_url, key, mode, work)
    for result in results:
        assert result.is_error is True
        approval_id = result.structured_content["approval_id"]
        assert result.content[0].text.startswith(f"pending_approval {approval_id}: ")
    assert upstream.calls == []


@pytest.mark.parametrize("mode", MODES)
def test_a_found_tool_called_by_name_costs_a_second_exchange_without_the_cursor(
    web_url, upstream, mode
):
    key = make_client_key("agent-relist", "agent")

    async def work(client):
        await search(client)
        for city in ("Lyon", "Nice"):
            result = await client.call_tool(FORECAST, {"city": city})
            assert result.structured_content["city"] == city

    _, sent = run_client(web_url, key, mode, work)
    assert sent[-4:] == ["tools/call", "tools/list", "tools/call", "tools/list"]


@pytest.mark.parametrize("mode", MODES)
def test_after_the_cursor_page_each_call_by_name_is_one_exchange(
    web_url, upstream, mode
):
    key = make_client_key("agent-cursor", "agent")

    async def work(client):
        found = await search(client)
        page = await client.list_tools(cursor=found["list_cursor"])
        names = [tool.name for tool in page.tools]
        results = [
            await client.call_tool(FORECAST, {"city": city})
            for city in ("Lyon", "Nice")
        ]
        return found, names, page.next_cursor, results

    (found, names, next_cursor, results), sent = run_client(web_url, key, mode, work)
    assert names == [tool["name"] for tool in found["tools"]]
    assert next_cursor is None
    assert sent[-3:] == ["tools/list", "tools/call", "tools/call"]
    assert [r.structured_content["city"] for r in results] == ["Lyon", "Nice"]
    assert [call.arguments["city"] for call in upstream.calls] == ["Lyon", "Nice"]
    rows = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    assert [row.output["outcome"] for row in rows] == ["started", "ran"] * 2


@pytest.mark.parametrize("mode", MODES)
def test_the_first_page_stays_the_three_tools_with_no_next_cursor(
    web_url, upstream, mode
):
    key = make_client_key("agent-first-page", "agent")

    async def work(client):
        await search(client)
        return await client.list_tools()

    page, _ = run_client(web_url, key, mode, work)
    assert [tool.name for tool in page.tools] == [
        "search_tools",
        "get_tool_details",
        "call_tool",
    ]
    assert page.next_cursor is None


def test_a_cursor_lists_only_the_tools_the_key_may_see(web_url, upstream):
    make_tool(
        name="payroll_export", description="Export payroll.", allowed_roles=["hr"]
    )
    hidden = create_catalog("secret", "Secret", "not this key's")
    make_tool(hidden, name="launch_codes", description="Codes.")
    key = make_client_key("agent-forged", "agent", catalogs=["default"])
    forged = cursor_for("default", ["payroll_export", FORECAST, "no_such", FORECAST])
    elsewhere = cursor_for("secret", ["launch_codes"])

    async def work(client):
        mine = await client.list_tools(cursor=forged)
        theirs = await client.list_tools(cursor=elsewhere)
        return mine, theirs

    (mine, theirs), _ = run_client(web_url, key, "auto", work)
    assert [tool.name for tool in mine.tools] == [FORECAST]
    assert theirs.tools == []


def raw(found: Any) -> str:
    """A cursor of the server's shape around any JSON."""
    return "found." + base64.urlsafe_b64encode(json.dumps(found).encode()).decode()


BAD_CURSORS = [
    "2",
    "found.",
    "found.!!!",
    "found." + "A" * 20_000,
    raw([]),
    raw({"names": [FORECAST]}),
    raw({"catalog": 1, "names": [FORECAST]}),
    raw({"catalog": "default", "names": FORECAST}),
    raw({"catalog": "default", "names": [""]}),
    raw({"catalog": "default", "names": ["x" * 201]}),
    raw({"catalog": "default", "names": [7]}),
    raw({"catalog": "default", "names": ["a"] * 51}),
    # Text Postgres cannot hold or UTF-8 cannot encode, under the base64.
    raw({"catalog": "default", "names": ["get\u0000forecast"]}),
    raw({"catalog": "def\u0000ault", "names": [FORECAST]}),
    raw({"catalog": "default", "names": ["\ud800"]}),
]


def test_every_cursor_the_server_never_gave_is_an_invalid_params_error(
    web_url, transactional_db
):
    key = make_client_key("agent-bad-cursor", "agent", rate_limit_per_minute=0)

    async def work(client):
        errors = []
        for cursor in BAD_CURSORS:
            with pytest.raises(MCPError) as refused:
                await client.list_tools(cursor=cursor)
            errors.append((refused.value.code, refused.value.message))
        return errors

    errors, _ = run_client(web_url, key, "legacy", work)
    refusal = "cursor: not one this server gave"
    assert errors == [(INVALID_PARAMS, refusal)] * len(BAD_CURSORS)
    rows = AuditEvent.objects.filter(event_type="mcp_refused")  # as every refusal
    assert [row.output["refused"] for row in rows] == [refusal] * len(BAD_CURSORS)
