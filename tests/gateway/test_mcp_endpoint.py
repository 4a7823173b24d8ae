"""/mcp on the same gunicorn and port as the REST API, driven by the official mcp
client in both eras (mode="legacy": the initialize handshake; mode="auto": the
2026-07-28 discover), with Quiver's API keys, access and audit."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import httpx2
import pytest
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from audit.models import AuditEvent
from catalog.services.catalogs import create_catalog
from identity.models import ApiClient
from identity.services.clients import create_api_client, revoke_api_client
from tests.aio import run_async
from tests.conftest import worker_env
from tests.factories import make_client_key, make_tool
from tests.outages import running_web

MODES = ["legacy", "auto"]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
JSON_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """One gunicorn for the module, on the test database."""
    with running_web(worker_env(), "mcp") as url:
        yield url


@pytest.fixture
def url(transactional_db: None, server_url: str) -> str:
    make_tool(name="get_weather", description="Current weather for a city.")
    make_tool(name="wipe_disk", description="Erase the whole disk.", safe=False)
    return server_url


def run_client(url: str, key: str, mode: str, work: Any) -> Any:
    async def main() -> Any:
        # httpx2's default 5 s read timeout is too short on a loaded 2-core machine.
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        async with (
            http,
            Client(
                streamable_http_client(f"{url}/mcp", http_client=http), mode=mode
            ) as client,
        ):  # noqa: E501
            return await work(client)

    return run_async(main())


@pytest.mark.parametrize(
    ("mode", "era"),
    [("legacy", HANDSHAKE_PROTOCOL_VERSIONS), ("auto", ("2026-07-28",))],
)
def test_each_mode_gets_its_own_era_of_the_protocol(url, mode, era):
    """auto probes server/discover and would fall back to initialize: it must not."""
    key = make_client_key("agent-era", "agent")

    async def work(client):
        return client.protocol_version

    assert run_client(url, key, mode, work) in era


@pytest.mark.parametrize("mode", MODES)
def test_tools_list_names_search_tools_get_tool_details_and_call_tool(url, mode):
    key = make_client_key("agent-a", "agent")

    async def work(client):
        return [tool.name for tool in (await client.list_tools()).tools]

    assert run_client(url, key, mode, work) == [
        "search_tools",
        "get_tool_details",
        "call_tool",
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_search_runs_the_selection_and_writes_one_audit_row_channel_mcp(url, mode):
    key = make_client_key("agent-b", "agent", allow_unsafe=True)

    async def work(client):
        args = {"query": "weather in Paris", "max_results": 1}
        return await client.call_tool("search_tools", args)

    result = run_client(url, key, mode, work)
    assert not result.is_error, result.content
    found = result.structured_content
    assert found["catalog"] == "default"
    [tool] = found["tools"]
    assert tool["name"] == "get_weather"
    assert tool["inputSchema"]["type"] == "object"
    assert set(tool["annotations"]) >= {
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    }
    assert tool["score"] > 0 and tool["reason"]
    assert "get_weather" in result.content[0].text
    events = AuditEvent.objects.filter(event_type="selection")
    [event] = events
    assert str(event.selection_id) == found["selection_id"]
    assert event.input["channel"] == "mcp"
    assert event.actor_name.endswith("agent-b") or "agent-b" in event.actor_name


def test_an_unsafe_tool_is_marked_destructive(url):
    key = make_client_key("agent-c", "agent", allow_unsafe=True)

    async def work(client):
        return await client.call_tool("get_tool_details", {"names": ["wipe_disk"]})

    found = run_client(url, key, "legacy", work).structured_content
    [tool] = found["tools"]
    assert tool["annotations"]["destructiveHint"] is True
    assert tool["annotations"]["readOnlyHint"] is False


@pytest.mark.parametrize("mode", MODES)
def test_a_hidden_tool_and_a_made_up_name_get_the_same_answer(url, mode):
    key = make_client_key("agent-d", "agent")  # may not be offered unsafe tools

    async def work(client):
        hidden = await client.call_tool("get_tool_details", {"names": ["wipe_disk"]})
        made_up = await client.call_tool("get_tool_details", {"names": ["no_such"]})
        return hidden, made_up

    hidden, made_up = run_client(url, key, mode, work)
    assert hidden.structured_content["tools"] == []
    assert hidden.structured_content["not_found"] == ["wipe_disk"]
    assert made_up.structured_content["not_found"] == ["no_such"]
    assert hidden.is_error == made_up.is_error
    text = hidden.content[0].text.replace("wipe_disk", "no_such")
    assert text == made_up.content[0].text


def test_a_search_with_a_bad_argument_is_a_tool_error_naming_it(url):
    key = make_client_key("agent-e", "agent")

    async def work(client):
        return await client.call_tool("search_tools", {"query": "x", "max_results": 0})

    result = run_client(url, key, "auto", work)
    assert result.is_error
    assert result.content[0].text.startswith("max_results:")
    assert not AuditEvent.objects.filter(event_type="selection").exists()


def post_init(url: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{url}/mcp", json=INIT, headers={**JSON_HEADERS, **headers}, timeout=30
    )


def test_no_key_is_a_401(url):
    response = post_init(url)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header", ["Bearer qv_nope_nope", "Bearer not-a-key", "Basic dXNlcjpwdw=="]
)
def test_an_unknown_or_malformed_key_is_a_401(url, header):
    assert post_init(url, Authorization=header).status_code == 401


def test_a_revoked_key_is_a_401(url):
    client, key = create_api_client("gone", "agent", catalogs="*")
    assert post_init(url, Authorization=f"Bearer {key}").status_code == 200
    revoke_api_client(client, actor=None)
    response = post_init(url, Authorization=f"Bearer {key}")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


def test_an_expired_key_is_a_401(url):
    client, key = create_api_client("old", "agent", catalogs="*")
    ApiClient.objects.filter(pk=client.pk).update(
        expires=timezone.now() - timedelta(seconds=1)
    )
    response = post_init(url, Authorization=f"Bearer {key}")
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "null", "http://127.0.0.1.evil.example", "file://"],
)
def test_a_foreign_origin_is_refused(url, origin):
    key = make_client_key("agent-f", "agent")
    auth = f"Bearer {key}"
    assert post_init(url, Authorization=auth, Origin=url).status_code == 200
    response = post_init(url, Authorization=auth, Origin=origin)
    assert response.status_code == 403
    assert response.json()["detail"].startswith("Origin:")


def test_a_foreign_host_is_refused_before_the_key_is_read(url):
    response = post_init(url, Host="evil.example")
    assert response.status_code == 421


def test_the_rest_api_still_answers_beside_it(url):
    key = make_client_key("agent-g", "agent")
    response = httpx.post(
        f"{url}/api/v1/select",
        json={"query": "weather"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    [event] = AuditEvent.objects.filter(event_type="selection")
    assert event.input["channel"] == "api"


def test_a_key_searches_only_its_own_catalogs(url):
    other = create_catalog("secret", "Secret", actor=None)
    make_tool(other, name="launch_rocket", description="Launch the rocket.")
    key = make_client_key("agent-h", "agent", catalogs=["default"])

    async def work(client):
        search = await client.call_tool(
            "search_tools", {"query": "launch the rocket", "catalog": "secret"}
        )
        details = await client.call_tool(
            "get_tool_details", {"names": ["launch_rocket"], "catalog": "secret"}
        )
        made_up = await client.call_tool(
            "get_tool_details", {"names": ["launch_rocket"], "catalog": "nowhere"}
        )
        return search, details, made_up

    search, details, made_up = run_client(url, key, "auto", work)
    assert search.is_error and search.content[0].text == "catalog: no catalog 'secret'"
    assert details.is_error
    assert details.content[0].text.replace("secret", "nowhere") == (
        made_up.content[0].text
    )
    assert not AuditEvent.objects.filter(event_type="selection").exists()


def test_searches_count_against_the_keys_rate_limit(url):
    key = make_client_key("agent-i", "agent", rate_limit_per_minute=1)

    async def work(client):
        first = await client.call_tool("search_tools", {"query": "weather"})
        second = await client.call_tool("search_tools", {"query": "weather"})
        return first, second

    first, second = run_client(url, key, "legacy", work)
    assert not first.is_error
    assert second.is_error and second.content[0].text.startswith("rate: over the limit")
    assert AuditEvent.objects.filter(event_type="selection").count() == 1


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_get_or_delete_is_a_405_at_once_never_a_held_stream(url, method):
    """Stateless: no server stream to open (a held GET would hold a worker)."""
    key = make_client_key("agent-j", "agent")
    response = httpx.request(
        method,
        f"{url}/mcp",
        headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream"},
        timeout=10,
    )
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"


@pytest.mark.parametrize("asked", ["2024-11-05", "2025-03-26"])
def test_an_initialize_asking_a_version_not_served_gets_the_newest_served(url, asked):
    """The specification's negotiation: the server answers a version it speaks
    (its newest), and a client that cannot speak it disconnects."""
    key = make_client_key("agent-k", "agent")
    init = {**INIT, "params": {**INIT["params"], "protocolVersion": asked}}
    response = httpx.post(
        f"{url}/mcp",
        json=init,
        headers={**JSON_HEADERS, "Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2099-01-01"])
def test_a_version_header_not_served_is_a_400_naming_it(url, version):
    key = make_client_key("agent-l", "agent")
    response = httpx.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
        headers={
            **JSON_HEADERS,
            "Authorization": f"Bearer {key}",
            "MCP-Protocol-Version": version,
        },
        timeout=30,
    )
    assert response.status_code == 400
    answer = response.json()
    assert answer["id"] == 4
    assert answer["error"]["code"] == -32022
    message = answer["error"]["message"]
    assert message.startswith(f"MCP-Protocol-Version: protocol version {version!r}")
    assert "2025-06-18, 2025-11-25 after initialize, 2026-07-28 per request" in message
    assert "_meta" not in message
    assert answer["error"]["data"]["requested"] == version
    [row] = AuditEvent.objects.filter(event_type="mcp_refused")
    assert (row.output["field"], row.output["code"]) == ("MCP-Protocol-Version", -32022)


@pytest.mark.parametrize("version", [None, "2025-06-18"])
def test_a_batch_is_refused_naming_the_body_never_a_parsers_dump(url, version):
    key = make_client_key("agent-m", "agent")
    headers = {**JSON_HEADERS, "Authorization": f"Bearer {key}"}
    if version:
        headers["MCP-Protocol-Version"] = version
    batch = [INIT, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    response = httpx.post(f"{url}/mcp", json=batch, headers=headers, timeout=30)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32600
    assert error["message"].startswith(
        "body: a JSON-RPC batch (an array) is not served"
    )
    assert "alidation error" not in response.text
    [row] = AuditEvent.objects.filter(event_type="mcp_refused")
    assert row.output["field"] == "body"
