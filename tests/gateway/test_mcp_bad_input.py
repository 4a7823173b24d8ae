"""Bad input on /mcp (issue 30, item 13): NUL, lone surrogates, repeated keys,
deep nesting, huge numbers and bytes that are not UTF-8, in any tool's arguments
or anywhere in the body, are a refusal naming the field (a tool error for a
tool's arguments, a JSON-RPC error for the rest), each with its audit row (the
gateway's ``mcp_refused``: such a call never reached the call path), never a
database message, "Internal server error" or "database unavailable", never
reaching the upstream; and the server's log never quotes them.

A real gunicorn on the test database, a real upstream MCP server, raw JSON-RPC
bodies (an SDK client cannot send a lone surrogate) and the official client in
both eras."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from audit.models import AuditEvent
from config.jsonparse import BAD_TEXT_RULE, DUPLICATE_KEY_RULE, MAX_BODY_DEPTH
from tests.aio import run_async
from tests.conftest import worker_env
from tests.factories import make_client_key
from tests.oauth_flow import agent_token
from tests.outages import ROOT, running_web
from tests.upstream import Upstream

SERVER = "mcp-bad-input"
# Every bad value carries this mark: the server's log must never show it.
MARK = "QVMARK"
BAD_TEXTS = {
    "nul": f"{MARK}a\\u0000b",
    "high_surrogate": f"{MARK}\\ud800",
    "low_surrogate": f"{MARK}x\\udfff",
}
FORECAST = "weather.get_forecast"
NOT_SHOWN = ("Internal server error", "database", "PostgreSQL", "psycopg", "NUL (0x00)")


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with running_web(worker_env(), SERVER) as url:
        yield url


@pytest.fixture(params=["key", "token"])
def key(request: Any, upstream: Upstream, server_url: str) -> str:
    """An agent key of every catalog; every test runs again with an OAuth
    access token of a person holding the same."""
    if request.param == "token":
        return agent_token(server_url, "bad-input-person")
    return make_client_key("agent-bad-input", "agent")


def server_log() -> str:
    import os

    name = f"{SERVER}{os.environ.get('PYTEST_XDIST_WORKER', '')}"
    return (ROOT / ".quiver" / "test" / f"web-{name}.log").read_text(errors="replace")


def post(url: str, key: str, body: bytes | str) -> httpx.Response:
    return httpx.post(
        f"{url}/mcp",
        content=body.encode() if isinstance(body, str) else body,
        headers={
            "Authorization": f"Bearer {key}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-06-18",
        },
        timeout=60,
    )


def tools_call(name: str, arguments: str, meta: str = "") -> str:
    extra = f', "_meta": {meta}' if meta else ""
    return (
        '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": '
        f'{{"name": "{name}", "arguments": {arguments}{extra}}}}}'
    )


def tool_error(response: httpx.Response) -> str:
    """The text of a tool error result (isError), failing on anything else."""
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True, result
    [block] = result["content"]
    return str(block["text"])


def last_row() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def refusal_rows(after: int = 0) -> list[AuditEvent]:
    kinds = ["mcp_refused", "tool_call"]
    return list(AuditEvent.objects.filter(pk__gt=after, event_type__in=kinds))


def assert_recorded(field: str, *, after: int = 0) -> AuditEvent:
    """Exactly one row for the refusal, naming the field: the gateway's
    ``mcp_refused`` (a call refused before the call path is no call's row)."""
    [row] = refusal_rows(after)
    assert row.event_type == "mcp_refused"
    assert row.output["field"] == field
    assert "arguments" not in row.input  # refused: only their hash is kept
    assert len(row.input["arguments_hash"]) == 64
    assert row.input["channel"] == "mcp"
    return row


def assert_quiet(text: str) -> None:
    for word in NOT_SHOWN:
        assert word not in text
    assert MARK not in server_log()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# (tool, arguments with BAD where the bad value goes, _meta, the field named)
PLACES = [
    ("search_tools", '{"query": "BAD"}', "", "query"),
    ("search_tools", '{"messages": [{"role": "user", "content": "BAD"}]}', "",
     "messages[0].content"),
    ("search_tools", '{"query": "x", "categories": ["BAD"]}', "", "categories[0]"),
    ("get_tool_details", '{"names": ["BAD"]}', "", "names[0]"),
    ("get_tool_details", '{"names": ["x"], "catalog": "BAD"}', "", "catalog"),
    ("call_tool", '{"name": "weather.get_forecast", "arguments": {"city": "BAD"}}',
     "", "arguments.city"),
    ("call_tool", '{"name": "BAD", "arguments": {}}', "", "name"),
    ("call_tool", '{"name": "weather.get_forecast", "catalog": "BAD"}', "",
     "catalog"),
    ("call_tool", '{"name": "weather.delete_file", "arguments": {"path": "/x"}, '
     '"approval_id": "BAD"}', "", "approval_id"),
    (FORECAST, '{"city": "BAD"}', "", "arguments.city"),
    (FORECAST, '{"city": {"BAD": 1}}', "", "arguments.city.BAD"),
    (FORECAST, '{"city": "Nice"}', '{"approval_id": "BAD"}', "_meta.approval_id"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "arguments", "meta", "field"),
    PLACES,
    ids=[f"{p[0]}-{p[3]}" for p in PLACES],
)
def test_unstorable_text_is_a_tool_error_naming_the_field_with_its_row(
    server_url, upstream, key, tool, arguments, meta, field
):
    for value in BAD_TEXTS.values():
        before = last_row()
        args, extra = arguments.replace("BAD", value), meta.replace("BAD", value)
        text = tool_error(post(server_url, key, tools_call(tool, args, extra)))
        named = field.replace("BAD", value)  # a key is named with its escapes
        assert text == f"{named}: {BAD_TEXT_RULE}", value
        row = assert_recorded(named, after=before)
        assert row.output["refused"] == text
        assert_quiet(text)
    assert upstream.calls == []


def test_a_direct_call_named_with_bad_text_is_refused_naming_the_name(
    server_url, upstream, key
):
    body = tools_call(f"weather.{MARK}\\u0000", '{"city": "Nice"}')
    assert tool_error(post(server_url, key, body)) == f"name: {BAD_TEXT_RULE}"
    row = assert_recorded("name")
    assert row.input["tool"] == f"weather.{MARK}\\u0000"  # stored, escaped
    assert upstream.calls == []


REPEATS = [
    ("search_tools", '{"query": "a", "query": "b"}', "query"),
    ("get_tool_details", '{"names": ["a"], "names": ["b"]}', "names"),
    ("call_tool", '{"name": "weather.get_forecast", '
     '"arguments": {"city": "Nice", "city": "Lyon"}}', "arguments.city"),
    (FORECAST, '{"city": "Nice", "days": 1, "days": 9}', "arguments.days"),
]  # fmt: skip


def test_a_repeated_key_in_arguments_is_refused_as_the_api_refuses_it(
    server_url, upstream, key
):
    for tool, arguments, field in REPEATS:
        before = last_row()
        text = tool_error(post(server_url, key, tools_call(tool, arguments)))
        assert text == f"{field}: {DUPLICATE_KEY_RULE}"
        assert_recorded(field, after=before)
    assert upstream.calls == []


BODIES = [
    (nested(10_000), -32600, f"body: JSON nested deeper than {MAX_BODY_DEPTH} levels"),
    (tools_call(FORECAST, '{"city": ' + nested(MAX_BODY_DEPTH) + "}"), -32600,
     f"body: JSON nested deeper than {MAX_BODY_DEPTH} levels"),
    (tools_call("search_tools", '{"query": "' + MARK + '"}').encode() + b"\xff",
     -32700, None),
    (tools_call("search_tools", '{"query": "x", "max_results": 1' + "0" * 5000
     + "}"), -32700, None),
    (tools_call("search_tools", '{"query": "x", "max_results": NaN}'), -32700,
     "body: not valid JSON (NaN is not allowed)"),
    ('{"jsonrpc": "2.0", "id": 4, "id": 5, "method": "tools/list"}', -32600,
     f"id: {DUPLICATE_KEY_RULE}"),
    ('{"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": '
     '{"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": '
     '{"name": "' + MARK + '\\u0000", "version": "1"}}}', -32602,
     f"params.clientInfo.name: {BAD_TEXT_RULE}"),
]  # fmt: skip


def test_a_body_the_api_would_refuse_is_a_json_rpc_error_naming_the_field(
    server_url, upstream, key
):
    for body, code, message in BODIES:
        before = last_row()
        response = post(server_url, key, body)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == code
        field = error["data"]["field"]
        assert error["message"].startswith(f"{field}: ")
        if message is not None:
            assert error["message"] == message
        [row] = refusal_rows(before)
        assert row.event_type == "mcp_refused"
        assert (row.output["field"], row.output["code"]) == (field, code)
        assert row.output["http_status"] == 400
        assert_quiet(response.text)
    assert upstream.calls == []


def test_json_at_the_apis_depth_limit_is_read(server_url, upstream, key):
    """The same limit as REST: 64 levels in all, here 61 inside the query."""
    query = '{"a": ' + nested(MAX_BODY_DEPTH - 4) + "}"
    response = post(
        server_url, key, tools_call("search_tools", f'{{"query": {query}}}')
    )
    assert response.json()["result"]["isError"] is False, response.text


def test_a_number_json_cannot_store_is_a_tool_error_naming_the_argument(
    server_url, upstream, key
):
    body = tools_call("search_tools", '{"query": {"a": 1e400}}')
    assert tool_error(post(server_url, key, body)) == "query: Value must be valid JSON."
    assert_recorded("query")
    body = tools_call(FORECAST, '{"city": "Nice", "days": -1e400}')
    text = tool_error(post(server_url, key, body))
    assert text.startswith("arguments: ")
    assert upstream.calls == []


def run_client(url: str, key: str, mode: str, work: Any) -> Any:
    async def main() -> Any:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with http, Client(transport, mode=mode) as client:
            return await work(client)

    return run_async(main())


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_both_eras_of_the_protocol_get_the_refusal_and_the_row(
    server_url, upstream, key, mode
):
    async def work(client):
        search = await client.call_tool("search_tools", {"query": f"{MARK}\x00"})
        direct = await client.call_tool(FORECAST, {"city": f"{MARK}\x00"})
        return search, direct

    search, direct = run_client(server_url, key, mode, work)
    assert search.is_error and direct.is_error
    assert search.content[0].text == f"query: {BAD_TEXT_RULE}"
    assert direct.content[0].text == f"arguments.city: {BAD_TEXT_RULE}"
    kinds = sorted(row.event_type for row in refusal_rows())
    assert kinds == ["mcp_refused", "mcp_refused"]
    assert upstream.calls == []
    assert MARK not in server_log()


def test_a_good_call_after_the_refusals_still_runs(server_url, upstream, key):
    body = tools_call(FORECAST, '{"city": "Nice"}')
    response = post(server_url, key, body)
    assert response.json()["result"]["isError"] is False, response.text
    assert [call.name for call in upstream.calls] == ["get_forecast"]
    assert json.loads(response.text)["result"]["structuredContent"]["city"] == "Nice"
