"""The test upstream (tests/upstream.py) is a real MCP server: the official SDK
client, through sources.connect, lists every page of its tools and calls them in
both eras of the protocol, and it refuses a request without its headers."""

from __future__ import annotations

import pytest

from sources.connect import open_client
from tests.aio import run_async
from tests.upstream import running_upstream

MODES = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
def test_the_client_lists_every_page_and_calls_a_tool(mode):
    async def work(url):
        async with open_client(url, mode=mode) as client:
            names, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                names += [tool.name for tool in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
            result = await client.call_tool("get_forecast", {"city": "Oslo", "days": 1})
            return names, result

    with running_upstream() as upstream:
        names, result = run_async(work(upstream.url))
        assert upstream.list_requests >= 3  # 7 tools, 3 a page
        assert [call.name for call in upstream.calls] == ["get_forecast"]
    assert names == list(upstream.tools)
    assert result.structured_content == {
        "city": "Oslo",
        "forecast": ["day 1: sunny, 21 C"],
    }


def test_a_request_without_the_required_header_is_refused_and_with_it_served():
    async def work(url, headers):
        async with open_client(url, headers, timeout=5) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    with running_upstream() as upstream:
        upstream.required_headers = {"authorization": "Bearer upstream-secret"}
        with pytest.raises(ExceptionGroup):  # the SDK: MCPError inside task groups
            run_async(work(upstream.url, {}))
        names = run_async(
            work(upstream.url, {"Authorization": "Bearer upstream-secret"})
        )
    assert names == ["get_forecast", "delete_file", "set_thermostat"]
