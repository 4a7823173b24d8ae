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
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from audit.models import AuditEvent
from calls.decisions import approve
from calls.models import Approval
from catalog.services import ensure_default_catalog
from catalog.services.catalogs import create_catalog
from sources.models import Source, SourceTool
from tests.aio import run_async
from tests.calls.approval_rows import restore_approver_groups
from tests.calls.conftest import link_source
from tests.conftest import worker_env
from tests.factories import make_client_key, make_tool, make_user
from tests.outages import running_web
from tests.upstream import upstream_tool
from tests.vault.rows import make_personal_source

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


@pytest.mark.parametrize("mode", MODES)
def test_a_direct_call_of_a_tool_quiver_does_not_have_is_a_json_rpc_error(
    server_url, upstream, mode
):
    """The specification's unknown tool (-32602), never a tool result; a hidden
    tool and a made-up name alike, each the call path's refused row."""
    secret = make_tool(
        name="weather.secret", parameters={"type": "object"}, allowed_roles=["ops"]
    )
    source = Source.objects.create(
        catalog=secret.catalog, name="hidden", url=upstream.url
    )
    SourceTool.objects.create(source=source, tool=secret, upstream_name="send_note")
    key = make_client_key("agent-mcp-hidden", "agent")

    async def work(client):
        refused = []
        for name in ("weather.secret", "weather.no_such"):
            with pytest.raises(MCPError) as caught:
                await client.call_tool(name, {"city": "Nice"})
            refused.append(caught.value)
        return refused

    hidden, made_up = run_client(server_url, key, mode, work)
    assert (hidden.code, made_up.code) == (INVALID_PARAMS, INVALID_PARAMS)
    assert made_up.message == "name: no tool 'weather.no_such' in 'default'"
    assert hidden.message.replace("secret", "no_such") == made_up.message
    assert hidden.data["field"] == made_up.data["field"] == "name"
    rows = recorded()
    assert [row.output["outcome"] for row in rows] == ["refused", "refused"]
    assert [str(row.pk) for row in rows] == [
        hidden.data["call_id"],
        made_up.data["call_id"],
    ]
    assert not AuditEvent.objects.filter(event_type="mcp_refused").exists()
    assert upstream.calls == []


def test_call_tool_of_an_unknown_name_stays_a_tool_error_the_model_can_correct(
    server_url, upstream
):
    """call_tool exists: a bad name in its arguments is its input to refuse."""
    key = make_client_key("agent-mcp-unknown", "agent")

    async def work(client):
        return await client.call_tool("call_tool", {"name": "weather.no_such"})

    result = run_client(server_url, key, "auto", work)
    assert result.is_error is True
    assert result.content[0].text == "name: no tool 'weather.no_such' in 'default'"
    assert [row.output["outcome"] for row in recorded()] == ["refused"]


def test_a_direct_call_by_a_key_without_the_default_catalog_is_unknown_too(
    server_url, upstream
):
    create_catalog("other", "Other", actor=None)
    key = make_client_key("agent-mcp-other", "agent", catalogs=["other"])

    async def work(client):
        with pytest.raises(MCPError) as caught:
            await client.call_tool("weather.get_forecast", {"city": "Nice"})
        return caught.value

    refused = run_client(server_url, key, "legacy", work)
    assert refused.code == INVALID_PARAMS
    assert refused.message == "name: no tool 'weather.get_forecast'"
    [row] = AuditEvent.objects.filter(event_type="mcp_refused")
    assert (row.output["field"], row.input["tool"]) == ("name", FORECAST)
    assert recorded() == [] and upstream.calls == []


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_of_no_arguments_is_asked_approved_and_run_with_an_empty_object(
    server_url, upstream, mode
):
    """What a sync makes of an upstream tool of no parameters and no
    readOnlyHint: it needs approval, and {} asks, is approved and runs once."""
    upstream.tools["ring_bell"] = upstream_tool("ring_bell", "Ring the office bell.")
    try:
        link_source(upstream, name="office")
        key = make_client_key("agent-mcp-bell", "agent", allow_unsafe=True)

        async def ask(client):
            direct = await client.call_tool("office.ring_bell", {})
            meta = await client.call_tool("call_tool", {"name": "office.ring_bell"})
            return direct, meta

        direct, meta = run_client(server_url, key, mode, ask)
        for pending in (direct, meta):
            assert pending.structured_content["status"] == "pending_approval", (
                pending.content
            )
        restore_approver_groups()
        person = make_user("ann", groups=("approver",))
        approval_id = direct.structured_content["approval_id"]
        approve(Approval.objects.get(pk=approval_id), person=person, reason="ok")

        async def again(client):
            meta = {"approval_id": approval_id}
            return await client.call_tool("office.ring_bell", {}, meta=meta)

        ran = run_client(server_url, key, mode, again)
    finally:
        del upstream.tools["ring_bell"]
    assert ran.is_error is False, ran.content
    assert [(call.name, call.arguments) for call in upstream.calls] == [
        ("ring_bell", {})
    ]
    outcomes = [row.output["outcome"] for row in recorded()]
    assert outcomes == ["pending", "pending", "started", "ran"]


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


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("direct", [False, True])
def test_a_tool_whose_server_acts_for_each_person_answers_needs_authorization(
    server_url, upstream, mode, direct
):
    tool = make_personal_source(ensure_default_catalog())
    key = make_client_key("agent-mcp-nobody", "agent")

    async def work(client):
        if direct:
            return await client.call_tool(tool.name, {})
        return await client.call_tool("call_tool", {"name": tool.name})

    result = run_client(server_url, key, mode, work)
    assert result.is_error is True
    assert result.structured_content["status"] == "needs_authorization"
    assert result.structured_content["authorization_url"] is None
    assert "acts for no person" in result.structured_content["reason"]
    assert result.content[0].text.startswith("needs_authorization: Not run.")
    assert result.meta["quiver/outcome"] == "needs_authorization"
    [event] = recorded()
    assert (event.output["outcome"], event.input["channel"]) == (
        "needs_authorization",
        "mcp",
    )
    assert upstream.calls == []
