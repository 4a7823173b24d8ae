"""A called name means one tool over /mcp, in both protocol eras: call_tool, a
direct tools/call and get_tool_details answer the tool the model was shown, and
a name two tools held before the one-name rule is refused naming that (and runs
neither). The REST paths: tests/calls/test_one_name_calls.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from calls.models import Approval
from catalog.models import Tool
from tests.calls.test_one_name_calls import SHOWN, try_to_take
from tests.conftest import worker_env
from tests.factories import make_client_key, stored_past_the_rules
from tests.gateway.test_mcp_calls import MODES, run_client
from tests.outages import running_web

CITY = {"city": "Lyon", "days": 1}


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with running_web(worker_env(), "mcp-one-name") as url:
        yield url


def three_ways(server_url: str, key: str, mode: str) -> tuple[Any, Any, Any]:
    """call_tool, a direct tools/call and get_tool_details, of SHOWN."""

    async def work(client: Any) -> tuple[Any, Any, Any]:
        meta = await client.call_tool("call_tool", {"name": SHOWN, "arguments": CITY})
        direct = await client.call_tool(SHOWN, CITY)
        details = await client.call_tool("get_tool_details", {"names": [SHOWN]})
        return meta, direct, details

    return run_client(server_url, key, mode, work)


@pytest.mark.parametrize("mode", MODES)
def test_every_way_in_answers_the_tool_the_model_was_shown(server_url, upstream, mode):
    try_to_take(Tool.objects.get(name="weather.delete_file"), SHOWN)
    key = make_client_key(f"agent-one-name-{mode}", "agent")
    meta, direct, details = three_ways(server_url, key, mode)
    assert meta.is_error is False, meta.content
    assert direct.is_error is False, direct.content
    assert [call.name for call in upstream.calls] == ["get_forecast"] * 2
    [tool] = details.structured_content["tools"]
    assert tool["description"].startswith("Weather forecast for a city")
    assert not Approval.objects.exists()


@pytest.mark.parametrize("mode", MODES)
def test_every_way_in_refuses_a_name_two_tools_held(server_url, upstream, mode):
    stored_past_the_rules(Tool.objects.get(name="weather.delete_file"), name=SHOWN)
    key = make_client_key(f"agent-two-names-{mode}", "agent")
    meta, direct, details = three_ways(server_url, key, mode)
    for answer in (meta, direct, details):
        assert answer.is_error is True
        assert "names more than one tool of catalog 'default'" in (
            answer.content[0].text
        ), answer.content
    assert upstream.calls == [] and not Approval.objects.exists()
