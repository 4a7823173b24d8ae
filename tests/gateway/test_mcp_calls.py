"""Tool calls over /mcp, with the official mcp client in both eras: the call_tool
meta-tool and a direct tools/call by a tool's own name run exactly as POST
/api/v1/tool-calls/execute (same order, approval, audit row with channel mcp),
against a real upstream MCP server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from audit.models import AuditEvent
from calls.models import Approval
from sources.models import Source, SourceTool
from tests.aio import run_async
from tests.calls.conftest import link_source
from tests.conftest import worker_env
from tests.factories import make_client_key, make_tool
from tests.outages import running_web
from tests.upstream import upstream_tool

MODES = ["legacy", "auto"]
FORECAST = "weather.get_forecast"


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with running_web(worker_env(), "mcp-calls") as url:
        yield url


def run_client(url: str, key: str, mode: str, work: Any) -> Any:
    async def main() -> Any:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        async with (
            http,
            Client(
                streamable_http_client(f"{url}/mcp", http_client=http), mode=mode
            ) as client,
        ):
            return await work(client)

    return run_async(main())


def recorded() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="tool_call").order_by("pk"))


@pytest.mark.parametrize("mode", MODES)
def test_call_tool_runs_the_upstream_tool_and_answers_its_result_as_it_was(
    server_url, upstream, mode
):
    key = make_client_key("agent-mcp-call", "agent")

    async def work(client):
        arguments = {"name": FORECAST, "arguments": {"city": "Lyon", "days": 1}}
        return await client.call_tool("call_tool", arguments)

    result = run_client(server_url, key, mode, work)
    assert result.is_error is False, result.content
    assert result.structured_content == {
        "city": "Lyon",
        "forecast": ["day 1: sunny, 21 C"],
    }
    assert result.content[0].text == "day 1: sunny, 21 C"
    [reached] = upstream.calls
    assert reached.arguments == {"city": "Lyon", "days": 1}
    started, event = recorded()
    assert event.input["channel"] == "mcp"
    assert event.output["outcome"] == "ran"
    assert (
        result.meta["quiver/call_id"] == str(started.pk) == str(event.input["call_id"])
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_is_called_directly_by_its_own_name(server_url, upstream, mode):
    key = make_client_key("agent-mcp-direct", "agent")

    async def work(client):
        return await client.call_tool(FORECAST, {"city": "Nice"})

    result = run_client(server_url, key, mode, work)
    assert result.is_error is False, result.content
    assert result.structured_content["city"] == "Nice"
    assert [call.name for call in upstream.calls] == ["get_forecast"]
    assert recorded()[0].input["channel"] == "mcp"


@pytest.mark.parametrize("mode", MODES)
def test_an_invalid_call_is_an_error_result_and_never_reaches_the_upstream(
    server_url, upstream, mode
):
    key = make_client_key("agent-mcp-bad", "agent")

    async def work(client):
        arguments = {"name": FORECAST, "arguments": {"days": 3}}
        return await client.call_tool("call_tool", arguments)

    result = run_client(server_url, key, mode, work)
    assert result.is_error is True
    assert result.structured_content["status"] == "refused"
    assert result.structured_content["errors"][0]["rule"] == "required"
    assert "city" in result.content[0].text
    assert upstream.calls == []
    assert recorded()[0].output["outcome"] == "refused"


@pytest.mark.parametrize("mode", MODES)
def test_a_call_needing_approval_is_pending_then_runs_once_approved(
    server_url, upstream, mode
):
    key = make_client_key("agent-mcp-approve", "agent")
    call = {"name": "weather.delete_file", "arguments": {"path": "/srv/old.log"}}

    async def ask(client):
        return await client.call_tool("call_tool", call)

    pending = run_client(server_url, key, mode, ask)
    assert pending.is_error is True
    assert pending.structured_content["status"] == "pending_approval"
    approval_id = pending.structured_content["approval_id"]
    assert upstream.calls == []
    text = pending.content[0].text
    assert text.startswith(
        f"pending_approval {approval_id}: Not run: a person must approve this call"
    )
    again = "call call_tool again with the same name and arguments and "
    assert f'{again}"approval_id": "{approval_id}"' in text
    assert "do not report the action as done" in text
    Approval.objects.filter(pk=approval_id).update(
        status="approved", decided=timezone.now()
    )

    async def again(client):
        return await client.call_tool("call_tool", {**call, "approval_id": approval_id})

    ran = run_client(server_url, key, mode, again)
    assert ran.is_error is False, ran.content
    assert [c.name for c in upstream.calls] == ["delete_file"]
    outcomes = [event.output["outcome"] for event in recorded()]
    assert outcomes == ["pending", "started", "ran"]


def test_a_hidden_tool_and_a_made_up_name_get_the_same_direct_answer(
    server_url, upstream
):
    secret = make_tool(
        name="weather.secret", parameters={"type": "object"}, allowed_roles=["ops"]
    )
    source = Source.objects.create(
        catalog=secret.catalog, name="hidden", url=upstream.url
    )
    SourceTool.objects.create(source=source, tool=secret, upstream_name="send_note")
    key = make_client_key("agent-mcp-hidden", "agent")

    async def work(client):
        hidden = await client.call_tool("weather.secret", {"city": "Nice"})
        made_up = await client.call_tool("weather.no_such", {"city": "Nice"})
        return hidden, made_up

    hidden, made_up = run_client(server_url, key, "auto", work)
    assert hidden.is_error and made_up.is_error
    text = hidden.content[0].text.replace("weather.secret", "weather.no_such")
    assert text == made_up.content[0].text
    assert upstream.calls == []


def test_call_tool_with_an_unknown_argument_names_it(server_url, upstream):
    key = make_client_key("agent-mcp-extra", "agent")

    async def work(client):
        return await client.call_tool(
            "call_tool", {"name": FORECAST, "arguments": {}, "extra": 1}
        )

    result = run_client(server_url, key, "legacy", work)
    assert result.is_error is True
    assert "extra" in result.content[0].text
    assert upstream.calls == []


def test_a_direct_call_carries_its_approval_in_meta(server_url, upstream):
    key = make_client_key("agent-mcp-meta", "agent")
    arguments = {"path": "/srv/direct.log"}

    async def ask(client):
        return await client.call_tool("weather.delete_file", arguments)

    pending = run_client(server_url, key, "legacy", ask)
    assert pending.is_error is True
    approval_id = pending.structured_content["approval_id"]
    text = pending.content[0].text
    assert "a person must approve this call of weather.delete_file" in text
    assert f'_meta {{"approval_id": "{approval_id}"}}' in text
    assert pending.structured_content["expires"] in text
    Approval.objects.filter(pk=approval_id).update(
        status="approved", decided=timezone.now()
    )

    async def again(client):
        meta = {"approval_id": approval_id}
        return await client.call_tool("weather.delete_file", arguments, meta=meta)

    ran = run_client(server_url, key, "legacy", again)
    assert ran.is_error is False, ran.content
    assert [call.arguments for call in upstream.calls] == [arguments]
    assert recorded()[-1].input["approval_id"] == approval_id


def test_a_result_with_structured_content_and_no_content_block_is_a_success(
    server_url, upstream
):
    """MCP allows a result of structured content alone; it is no error."""
    upstream.tools["structured_only"] = upstream_tool(
        "structured_only", "Answers structured content only.", read_only=True
    )
    try:
        link_source(upstream, name="bare")
        key = make_client_key("agent-mcp-bare", "agent")

        async def work(client):
            return await client.call_tool("bare.structured_only", {})

        result = run_client(server_url, key, "legacy", work)
    finally:
        del upstream.tools["structured_only"]
    assert result.is_error is False, result.content
    assert result.content == [] and result.structured_content == {"ok": True}
    assert recorded()[-1].output["outcome"] == "ran"
