"""What a tool call through Quiver costs beside a direct call to the same upstream
MCP server with the official SDK client (issue 22: at most 1.5x at p50), same
run, same machine.

Run (one line; ``make bench-calls``):

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/call_overhead.py

Options: ``--requests N`` (200), ``--warmup N`` (10), ``--fresh N`` (20: direct
calls that open a new SDK client each, for scale), ``--tool-ms N`` (0: call
``get_forecast``, which answers at once; N > 0: ``slow_echo``, which answers after
N ms, as a tool doing real work does).

The upstream is the tests' real MCP server (tests/upstream.py, the official SDK's
server) in a process of its own; Quiver is gunicorn serving ``config.wsgi`` (one
worker, as bench/speed.py starts it) with a source for that server and its
read-only ``get_forecast`` as a catalog tool. Each round makes the same call
five ways, in turns so none always goes first: directly with a connected SDK
client, as ``POST /api/v1/tool-calls/execute`` (httpx, keep-alive), as the
``call_tool`` meta-tool over ``/mcp`` (a connected SDK client), and over ``/mcp``
by the name ``search_tools`` answered, by a client that never listed the tool
(the SDK lists tools after each successful call, for the output schema) and by
one that listed the search's ``list_cursor`` page once. Client-measured.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import httpx2  # noqa: E402
import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from bench import speed  # noqa: E402  (sets up Django)
from catalog.services import create_tool  # noqa: E402
from catalog.services.catalogs import create_catalog  # noqa: E402
from catalog.services.clients import create_api_client  # noqa: E402
from catalog.spec import ToolSpec  # noqa: E402
from sources.models import Source, SourceTool  # noqa: E402

SLUG = f"{speed.PREFIX}-calls"
FORECAST = (
    "get_forecast",
    {"city": "Paris", "days": 2},
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)
ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "seconds": {"type": "number"}},
    "required": ["text"],
    "additionalProperties": False,
}


def the_call(tool_ms: int) -> tuple[str, dict[str, object], dict[str, object]]:
    """The upstream tool, its arguments and its input schema."""
    if tool_ms <= 0:
        return FORECAST
    return "slow_echo", {"text": "hi", "seconds": tool_ms / 1000}, ECHO_SCHEMA


Timed = Callable[[], Awaitable[float]]


def start_upstream() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "_upstream.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http"):
        raise SystemExit("the upstream MCP server did not start")
    return process, url


def build(url: str, tool_ms: int) -> str:
    """The catalog, its source and tool, and an agent key without a rate limit."""
    name, _, schema = the_call(tool_ms)
    Source.objects.filter(catalog__slug=SLUG).delete()
    speed.clean_up()
    catalog = create_catalog(SLUG, "Bench calls", "bench/call_overhead.py")
    tool = create_tool(
        catalog,
        ToolSpec(
            name=f"weather.{name}",
            description=f"The test upstream's {name}.",
            parameters=schema,
            annotations={"readOnlyHint": True},
        ),
        actor=None,
    )
    source = Source.objects.create(catalog=catalog, name="weather", url=url)
    SourceTool.objects.create(source=source, tool=tool, upstream_name=name)
    _, key = create_api_client(
        speed.CLIENT_NAME, "agent", catalogs=[SLUG], rate_limit_per_minute=0
    )
    return key


async def timed(work: Awaitable[object]) -> float:
    started = time.perf_counter()
    await work
    return (time.perf_counter() - started) * 1000


async def measure(
    args: argparse.Namespace, upstream: str, quiver: str, key: str
) -> tuple[dict[str, list[float]], list[float]]:
    bearer = {"Authorization": f"Bearer {key}"}
    samples: dict[str, list[float]] = {}
    tool, arguments, _ = the_call(args.tool_ms)
    call = {"name": f"weather.{tool}", "arguments": arguments, "catalog": SLUG}
    endpoint = f"{quiver}/mcp"
    async with (
        Client(upstream) as direct,
        httpx.AsyncClient(headers=bearer, timeout=60) as rest,
        httpx2.AsyncClient(headers=bearer, timeout=60) as http,
        Client(streamable_http_client(endpoint, http_client=http)) as mcp,
        Client(streamable_http_client(endpoint, http_client=http)) as plain,
        Client(streamable_http_client(endpoint, http_client=http)) as listed,
    ):
        # The name search_tools answers, called directly by a client that never
        # listed it (the SDK lists tools after each call, looking for its output
        # schema) and by one that listed the search's list_cursor page once.
        by_name = await found_name(listed, tool)

        async def by_rest() -> None:
            response = await rest.post(f"{quiver}/api/v1/tool-calls/execute", json=call)
            if response.status_code != 200 or response.json()["outcome"] != "ran":
                raise SystemExit(f"execute: {response.status_code} {response.text}")

        async def by_mcp() -> None:
            result = await mcp.call_tool("call_tool", call)
            if result.is_error:
                raise SystemExit(f"call_tool: {result.content}")

        ways: dict[str, Callable[[], Awaitable[object]]] = {
            "direct": lambda: direct.call_tool(tool, arguments),
            "rest": by_rest,
            "mcp": by_mcp,
            "by_name": lambda: plain.call_tool(by_name, arguments),
            "by_name_listed": lambda: listed.call_tool(by_name, arguments),
        }
        order = list(ways)
        samples.update({name: [] for name in ways})
        for number in range(args.warmup + args.requests):
            order = order[1:] + order[:1]  # each way goes first in turn
            for name in order:
                elapsed = await timed(ways[name]())
                if number >= args.warmup:
                    samples[name].append(elapsed)
    fresh: list[float] = []
    for _ in range(args.fresh):
        started = time.perf_counter()
        async with Client(upstream) as client:
            await client.call_tool(tool, arguments)
        fresh.append((time.perf_counter() - started) * 1000)
    return samples, fresh


async def found_name(client: Client, tool: str) -> str:
    """search_tools for the tool (its name as the search answers it); then the
    answer's list_cursor page, listed once."""
    found = await client.call_tool("search_tools", {"query": tool, "catalog": SLUG})
    answer = found.structured_content or {}
    if found.is_error or not answer.get("tools"):
        raise SystemExit(f"search_tools: {found.content}")
    await client.list_tools(cursor=answer["list_cursor"])
    return str(answer["tools"][0]["name"])


def report(samples: dict[str, list[float]], fresh: list[float], tool_ms: int) -> None:
    def p(values: list[float], q: float) -> float:
        return float(np.percentile(values, q))

    base = p(samples["direct"], 50)
    rows = [
        ("direct SDK call (connected client)", samples["direct"]),
        ("Quiver: POST /api/v1/tool-calls/execute", samples["rest"]),
        ("Quiver: /mcp call_tool", samples["mcp"]),
        ("Quiver: /mcp the tool by its name (SDK re-lists)", samples["by_name"]),
        ("Quiver: /mcp by name, list_cursor page listed", samples["by_name_listed"]),
        ("direct SDK call, new client each time", fresh),
    ]
    what = f"a tool taking {tool_ms} ms" if tool_ms else "a tool answering at once"
    print(f"\n### A tool call through Quiver vs a direct SDK call ({what})\n")
    print("| | calls | p50 ms | p95 ms | p50 / direct |\n|---|---:|---:|---:|---:|")
    for label, values in rows:
        if values:
            print(
                f"| {label} | {len(values)} | {p(values, 50):.1f} | "
                f"{p(values, 95):.1f} | {p(values, 50) / base:.2f}x |"
            )
    slowest = max(p(samples["rest"], 50), p(samples["mcp"], 50))
    worst = slowest / base
    verdict = "ok" if worst <= 1.5 else "OVER"
    print(
        f"\nthrough Quiver / direct at p50: {worst:.2f}x (target <= 1.5x: {verdict}), "
        f"+{slowest - base:.1f} ms; load avg {os.getloadavg()[0]:.1f}"
    )
    relist, listed = p(samples["by_name"], 50), p(samples["by_name_listed"], 50)
    print(
        f"a found tool by its name at p50: {relist:.1f} ms re-listing, "
        f"{listed:.1f} ms once the list_cursor page is listed "
        f"({listed - relist:+.1f} ms)"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--fresh", type=int, default=20)
    parser.add_argument("--tool-ms", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("httpx", "httpx2", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)
    call_command("migrate", verbosity=0, interactive=False)
    log_dir = Path(tempfile.mkdtemp(prefix="bench-calls-"))
    upstream, url = start_upstream()
    try:
        key = build(url, args.tool_ms)
        with speed.server(log_dir) as quiver:
            samples, fresh = asyncio.run(measure(args, url, quiver.url, key))
    finally:
        if upstream.stdin is not None:
            upstream.stdin.close()
        upstream.wait(timeout=30)
        Source.objects.filter(catalog__slug=SLUG).delete()
        speed.clean_up()
        shutil.rmtree(log_dir, ignore_errors=True)
    report(samples, fresh, args.tool_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
