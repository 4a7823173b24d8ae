"""quiver-mcp, the stdio bridge: the official mcp client launches it as a stdio
server, in both eras, and reaches a live Quiver's /mcp through it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters

from audit.models import AuditEvent
from config.devstack import free_port
from tests.aio import run_async
from tests.conftest import worker_env
from tests.factories import make_client_key, make_tool
from tests.outages import running_web

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
MODES = ["legacy", "auto"]
# The worktree's client, whatever copy is installed in the venv.
BRIDGE_ENV = {"PYTHONPATH": str(CLIENT)}


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """One gunicorn for the module, on the test database."""
    with running_web(worker_env(), "bridge") as url:
        yield url


@pytest.fixture
def url(transactional_db: None, server_url: str) -> str:
    make_tool(name="get_weather", description="Current weather for a city.")
    make_tool(name="send_email", description="Send an email to a person.")
    return server_url


def bridge(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "quiver_client.bridge", *args],
        env={**BRIDGE_ENV, **(env or {})},
        cwd=str(CLIENT.parent / "examples"),  # no project packages on the path
    )


def run(server: StdioServerParameters, mode: str, work: Any) -> Any:
    async def main() -> Any:
        async with Client(server, mode=mode) as client:
            return await work(client)

    return run_async(asyncio.wait_for(main(), timeout=60))


def refusal(server: StdioServerParameters, mode: str) -> MCPError:
    """The MCP error the client raises on connecting (out of its task groups)."""

    async def work(client):
        return await client.list_tools()

    try:
        run(server, mode, work)
    except BaseException as exc:  # noqa: BLE001 - unwrapped below
        found: list[BaseException] = [exc]
        while found:
            error = found.pop()
            if isinstance(error, MCPError):
                return error
            found += getattr(error, "exceptions", [])
        raise
    raise AssertionError("the client connected")


@pytest.mark.parametrize("mode", MODES)
def test_the_bridge_lists_quivers_three_tools(url, mode):
    key = make_client_key("bridge-a", "agent")

    async def work(client):
        tools = (await client.list_tools()).tools
        return client.protocol_version, [tool.name for tool in tools]

    era, names = run(bridge("--url", url, "--key", key), mode, work)
    assert names == ["search_tools", "get_tool_details", "call_tool"]
    # auto speaks 2026-07-28 through the bridge (no fallback to the handshake)
    assert (era == "2026-07-28") == (mode == "auto")


@pytest.mark.parametrize("mode", MODES)
def test_a_search_through_the_bridge_writes_one_audit_row_channel_mcp(url, mode):
    key = make_client_key("bridge-b", "agent")

    async def work(client):
        args = {"query": "weather in Paris", "max_results": 1}
        return await client.call_tool("search_tools", args)

    env = {"QUIVER_URL": url, "QUIVER_API_KEY": key}  # configured by environment
    result = run(bridge(env=env), mode, work)
    assert not result.is_error, result.content
    found = result.structured_content
    [tool] = found["tools"]
    assert tool["name"] == "get_weather"
    [event] = AuditEvent.objects.filter(event_type="selection")
    assert str(event.selection_id) == found["selection_id"]
    assert event.input["channel"] == "mcp"
    assert "bridge-b" in event.actor_name


@pytest.mark.parametrize("mode", MODES)
def test_a_bad_key_is_an_error_naming_the_401_not_a_hang(url, mode):
    error = refusal(bridge("--url", url, "--key", "qv_nope_nope"), mode)
    assert "401" in str(error)
    assert "QUIVER_API_KEY" in str(error)


def test_an_unreachable_quiver_is_an_error_not_a_crash():
    nowhere = f"http://127.0.0.1:{free_port()}"

    error = refusal(bridge("--url", nowhere, "--key", "qv_x_y"), "auto")
    assert "cannot reach Quiver" in str(error)


def raw_session(url: str, key: str, lines: list[str]) -> tuple[list[Any], str]:
    """Feed lines to the bridge's stdin; its stdout as JSON, its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "quiver_client.bridge", "--url", url, "--key", key],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **BRIDGE_ENV},
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_notifications_get_no_output_and_stdout_is_only_json_rpc(url):
    key = make_client_key("bridge-c", "agent")
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    lines = [
        json.dumps(init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "",
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": "two", "method": "tools/list"}),
    ]
    answers, stderr = raw_session(url, key, lines)
    by_id = {answer["id"]: answer for answer in answers}
    assert len(answers) == 3  # initialize, the parse error, tools/list; no 202s
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[None]["error"]["code"] == -32700
    names = [tool["name"] for tool in by_id["two"]["result"]["tools"]]
    assert names == ["search_tools", "get_tool_details", "call_tool"]
    assert "not JSON" in stderr and "Traceback" not in stderr
    assert key not in stderr


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        ([], {}, "--url (or QUIVER_URL) and --key (or QUIVER_API_KEY)"),
        (["--url", "http://127.0.0.1:8000"], {}, "--key (or QUIVER_API_KEY)"),
        ([], {"QUIVER_API_KEY": "qv_x_y"}, "--url (or QUIVER_URL)"),
        (["--url", "127.0.0.1:8000", "--key", "k"], {}, "http:// or https://"),
    ],
)
def test_missing_url_or_key_exits_2_with_usage_on_stderr(args, env, named):
    clean = {
        k: v for k, v in os.environ.items() if k not in ("QUIVER_URL", "QUIVER_API_KEY")
    }
    done = subprocess.run(
        [sys.executable, "-m", "quiver_client.bridge", *args],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        env={**clean, **BRIDGE_ENV, **env},
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("usage: quiver-mcp")
    assert named in done.stderr


def test_quiver_mcp_is_the_client_packages_console_script():
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"quiver-mcp": "quiver_client.bridge:main"}
