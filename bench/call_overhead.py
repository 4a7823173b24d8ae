"""A tool call through Quiver beside the fastest peer, the FastMCP proxy with a
reused upstream session (issue 32: Quiver's p50 <= 1.0x the proxy's), and beside a
direct call to the same upstream, same run, same machine.

Run (one line; ``make bench-calls``, which first builds the peer's venv):

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/call_overhead.py

Options: ``--requests N`` (300 rounds), ``--warmup N`` (20), ``--fresh N`` (20:
direct calls that open a new SDK client each, for scale), ``--tool-ms N`` (0: call
``get_forecast``, which answers at once; N > 0: ``slow_echo``, which answers after
N ms, as a tool doing real work does), ``--no-proxy`` (without the peer).

The processes:

* the upstream: the tests' real MCP server (tests/upstream.py, the official SDK's
  server) in a process of its own, listing its tools in one page;
* the peer: fastmcp's ``create_proxy`` given a connected ``Client`` (so one
  upstream session serves every call), serving streamable HTTP in a process of its
  own, from its own venv (bench/_fastmcp_proxy.py; ``make bench-fastmcp``);
* Quiver: the processes of ``make run`` (the Celery worker, and gunicorn as
  ``config/gunicorn.py`` runs it: 2 threaded workers) on a database of their own
  (``quiver_bench_calls``, migrated, dropped at the end), with a source for the
  upstream and its read-only ``get_forecast`` as a catalog tool, and an agent key
  without a rate limit. Every check and both audit rows of each call are kept.

Each round makes the same call six ways, in turns so none always goes first:
directly with a connected SDK ``Client``; through the proxy with a connected SDK
``Client``; ``tools/call`` of ``call_tool`` on Quiver's ``/mcp`` (a connected SDK
``Client``); ``POST /api/v1/tool-calls/execute`` (httpx, keep-alive); and over
``/mcp`` by the name ``search_tools`` answered, by a client that never listed the
tool (the SDK lists tools after each successful call, for the output schema) and
by one that listed the search's ``list_cursor`` page once. Latency is
client-measured. Around each call the on-CPU time of the server's processes is
read (``/proc/<pid>/task/*/schedstat``, nanoseconds): the proxy's process for the
proxy; the web workers and their Postgres backends for Quiver (Redis, a few
commands a call, is not counted); the upstream's for every way. On a loaded
machine the CPU time per call is the steadier number; the latency ratio is from
this one run, printed with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import httpx2  # noqa: E402
import numpy as np  # noqa: E402
import psycopg  # noqa: E402

from bench._loadstack import (  # noqa: E402
    Janitor,
    MakeRun,
    create_database,
    drop_database,
    with_database,
)

DATABASE = "quiver_bench_calls"
LOGS = ROOT / ".quiver" / "bench-calls-logs"
STATE = ROOT / ".quiver" / "bench-calls"
PEER_PYTHON = ROOT / ".quiver" / "bench-fastmcp" / "venv" / "bin" / "python"
SLUG = "bench-calls"
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
# The upstream lists its tools in one page: the proxy lists them again before
# every call (fastmcp's client checks a result against the tool's output schema),
# and with the tests' pages of 3 that would be three requests instead of one.
UPSTREAM_PAGE = 100
WAYS = {
    "direct": "direct SDK call (connected client)",
    "proxy": "FastMCP proxy, reused upstream session",
    "mcp": "Quiver: /mcp tools/call (call_tool)",
    "rest": "Quiver: POST /api/v1/tool-calls/execute",
    "by_name": "Quiver: /mcp the tool by its name (SDK re-lists)",
    "by_name_listed": "Quiver: /mcp by name, list_cursor page listed",
}


def say(message: str) -> None:
    print(f"[calls] {message}", file=sys.stderr, flush=True)


def the_call(tool_ms: int) -> tuple[str, dict[str, object], dict[str, object]]:
    """The upstream tool, its arguments and its input schema."""
    if tool_ms <= 0:
        return FORECAST
    return "slow_echo", {"text": "hi", "seconds": tool_ms / 1000}, ECHO_SCHEMA


# --- the processes --------------------------------------------------------------------


def start_line(command: list[str], what: str) -> tuple[subprocess.Popen[str], str]:
    """A process that prints its URL on its first line and serves until stdin
    closes."""
    process = subprocess.Popen(
        command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http"):
        raise SystemExit(f"the {what} did not start")
    return process, url


def stop_line(process: subprocess.Popen[str]) -> None:
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def build(url: str, tool_ms: int) -> str:
    """Migrate; the catalog, its source and tool, and an agent key without a rate
    limit (the calls bench measures the call path, not the budget)."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from catalog.services import create_tool
    from catalog.services.catalogs import create_catalog
    from catalog.spec import ToolSpec
    from identity.services.clients import create_api_client
    from sources.models import Source, SourceTool

    call_command("migrate", verbosity=0, interactive=False)
    name, _, schema = the_call(tool_ms)
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
        "bench-caller", "agent", catalogs=[SLUG], rate_limit_per_minute=0
    )
    connections.close_all()
    return key


# --- CPU time of the servers ----------------------------------------------------------


def on_cpu_ns(pid: int) -> int:
    """Nanoseconds the process's threads have run (0 once it is gone)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


@dataclass
class Servers:
    """The processes whose CPU a call costs, by part."""

    upstream: int
    proxy: int | None
    gunicorn: int
    dsn: str
    parts: dict[str, list[int]] = field(default_factory=dict)

    def find(self) -> None:
        """The web workers (gunicorn's children) and their Postgres backends (the
        bench database's, but this process's own)."""
        path = Path(f"/proc/{self.gunicorn}/task/{self.gunicorn}/children")
        workers = [int(pid) for pid in path.read_text().split()]
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s "
                "AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
                (DATABASE,),
            ).fetchall()
        self.parts = {
            "quiver": workers,
            "postgres": [int(row[0]) for row in rows],
            "upstream": [self.upstream],
            "proxy": [self.proxy] if self.proxy else [],
        }

    def read(self) -> dict[str, dict[int, int]]:
        return {
            part: {pid: on_cpu_ns(pid) for pid in pids}
            for part, pids in self.parts.items()
        }


def spent_ns(before: dict[int, int], after: dict[int, int]) -> int:
    """CPU time the processes ran between two reads (one gone since: not counted)."""
    return sum(
        max(0, after[pid] - before[pid])
        for pid in before
        if before[pid] and after.get(pid)
    )


# --- the measurement ------------------------------------------------------------------


CpuRead = dict[str, dict[int, int]]


@dataclass
class Samples:
    ms: dict[str, list[float]] = field(default_factory=dict)
    cpu_ns: dict[str, dict[str, int]] = field(default_factory=dict)
    fresh: list[float] = field(default_factory=list)

    def add(self, way: str, ms: float, before: CpuRead, after: CpuRead) -> None:
        self.ms.setdefault(way, []).append(ms)
        spent = self.cpu_ns.setdefault(way, {})
        for part, pids in after.items():
            spent[part] = spent.get(part, 0) + spent_ns(before[part], pids)


async def measure(
    args: argparse.Namespace, urls: dict[str, str], key: str, servers: Servers
) -> Samples:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    bearer = {"Authorization": f"Bearer {key}"}
    tool, arguments, _ = the_call(args.tool_ms)
    call = {"name": f"weather.{tool}", "arguments": arguments, "catalog": SLUG}
    quiver = urls["quiver"]
    async with (
        Client(urls["upstream"]) as direct,
        Client(urls.get("proxy") or urls["upstream"]) as proxy,
        httpx.AsyncClient(headers=bearer, timeout=60) as rest,
        httpx2.AsyncClient(headers=bearer, timeout=60) as http,
        Client(streamable_http_client(f"{quiver}/mcp", http_client=http)) as mcp,
        Client(streamable_http_client(f"{quiver}/mcp", http_client=http)) as plain,
        Client(streamable_http_client(f"{quiver}/mcp", http_client=http)) as listed,
    ):
        by_name = await found_name(listed, tool)

        async def by_rest() -> None:
            response = await rest.post(f"{quiver}/api/v1/tool-calls/execute", json=call)
            if response.status_code != 200 or response.json()["outcome"] != "ran":
                raise SystemExit(f"execute: {response.status_code} {response.text}")

        async def by_mcp(client: Any, name: str, given: dict[str, Any]) -> None:
            result = await client.call_tool(name, given)
            if result.is_error:
                raise SystemExit(f"{name}: {result.content}")

        ways: dict[str, Callable[[], Awaitable[None]]] = {
            "direct": lambda: by_mcp(direct, tool, arguments),
            "proxy": lambda: by_mcp(proxy, tool, arguments),
            "mcp": lambda: by_mcp(mcp, "call_tool", call),
            "rest": by_rest,
            "by_name": lambda: by_mcp(plain, by_name, arguments),
            "by_name_listed": lambda: by_mcp(listed, by_name, arguments),
        }
        if not urls.get("proxy"):
            del ways["proxy"]
        samples = Samples()
        order = list(ways)
        for number in range(args.warmup + args.requests):
            if number >= args.warmup and number % 10 == 0:
                servers.find()  # the backends of threads that started since
            order = order[1:] + order[:1]  # each way goes first in turn
            for name in order:
                before = servers.read() if number >= args.warmup else {}
                started = time.perf_counter()
                await ways[name]()
                elapsed = (time.perf_counter() - started) * 1000
                if number >= args.warmup:
                    samples.add(name, elapsed, before, servers.read())
    for _ in range(args.fresh):
        started = time.perf_counter()
        async with Client(urls["upstream"]) as client:
            await client.call_tool(tool, arguments)
        samples.fresh.append((time.perf_counter() - started) * 1000)
    return samples


async def found_name(client: Any, tool: str) -> str:
    """search_tools for the tool (its name as the search answers it); then the
    answer's list_cursor page, listed once."""
    found = await client.call_tool("search_tools", {"query": tool, "catalog": SLUG})
    answer = found.structured_content or {}
    if found.is_error or not answer.get("tools"):
        raise SystemExit(f"search_tools: {found.content}")
    await client.list_tools(cursor=answer["list_cursor"])
    return str(answer["tools"][0]["name"])


# --- the table ------------------------------------------------------------------------


def table(samples: Samples, args: argparse.Namespace) -> str:
    def p(values: list[float], q: float) -> float:
        return float(np.percentile(values, q))

    base = p(samples.ms["proxy"], 50) if "proxy" in samples.ms else None
    what = f"a tool taking {args.tool_ms} ms" if args.tool_ms else "an instant tool"
    lines = [
        f"A tool call ({what}), {args.requests} interleaved rounds; "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
        "",
        "| way | calls | p50 ms | p95 ms | p50 / proxy | server CPU ms/call "
        "| upstream CPU ms/call |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for way, label in WAYS.items():
        values = samples.ms.get(way)
        if not values:
            continue
        spent = samples.cpu_ns[way]
        own = {"proxy": ["proxy"], "mcp": ["quiver", "postgres"]}
        for quivers in ("rest", "by_name", "by_name_listed"):
            own[quivers] = own["mcp"]
        server = sum(spent.get(part, 0) for part in own.get(way, []))
        server_text = f"{server / len(values) / 1e6:.2f}" if way in own else "-"
        if way in own and way != "proxy":
            web = spent.get("quiver", 0) / len(values) / 1e6
            server_text += f" (web {web:.2f})"
        ratio = f"{p(values, 50) / base:.2f}x" if base else "-"
        lines.append(
            f"| {label} | {len(values)} | {p(values, 50):.1f} | {p(values, 95):.1f} "
            f"| {ratio} | {server_text} "
            f"| {spent.get('upstream', 0) / len(values) / 1e6:.2f} |"
        )
    if samples.fresh:
        fresh = p(samples.fresh, 50)
        ratio = f"{fresh / base:.2f}x" if base else "-"
        lines.append(
            f"| direct SDK call, new client each time | {len(samples.fresh)} "
            f"| {fresh:.1f} | {p(samples.fresh, 95):.1f} | {ratio} | - | - |"
        )
    if base:
        worst = max(p(samples.ms[way], 50) for way in ("mcp", "rest")) / base
        verdict = "ok" if worst <= 1.0 else "OVER"
        lines += [
            "",
            f"Quiver / proxy at p50: {worst:.2f}x (target <= 1.0x: {verdict})",
        ]
    if "by_name" in samples.ms:
        relist = p(samples.ms["by_name"], 50)
        once = p(samples.ms["by_name_listed"], 50)
        lines.append(
            f"a found tool by its name at p50: {relist:.1f} ms re-listing, "
            f"{once:.1f} ms once the list_cursor page is listed "
            f"({once - relist:+.1f} ms)"
        )
    return "\n".join(lines)


# --- main -----------------------------------------------------------------------------


def run(args: argparse.Namespace, dsn: str) -> str:
    upstream_command = [sys.executable, str(ROOT / "bench" / "_upstream.py")]
    upstream, upstream_url = start_line(
        [*upstream_command, str(UPSTREAM_PAGE)], "upstream MCP server"
    )
    proxy: subprocess.Popen[str] | None = None
    try:
        urls = {"upstream": upstream_url}
        if not args.no_proxy:
            if not PEER_PYTHON.exists():
                raise SystemExit("no peer venv: run `make bench-fastmcp` first")
            command = [str(PEER_PYTHON), str(ROOT / "bench" / "_fastmcp_proxy.py")]
            proxy, urls["proxy"] = start_line([*command, upstream_url], "proxy")
        key = build(upstream_url, args.tool_ms)
        env = {**os.environ, "DEBUG": "false"}
        env.setdefault("SECRET_KEY", os.urandom(32).hex())
        stack = MakeRun(env, LOGS, "bench-calls")
        try:
            stack.wait_ready()
            urls["quiver"] = stack.url
            servers = Servers(
                upstream.pid, proxy.pid if proxy else None, stack.processes[1].pid, dsn
            )
            say(f"measuring {args.requests} rounds ...")
            samples = asyncio.run(measure(args, urls, key, servers))
        finally:
            stack.stop()
    finally:
        if proxy is not None:
            stop_line(proxy)
        stop_line(upstream)
    return table(samples, args)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--fresh", type=int, default=20)
    parser.add_argument("--tool-ms", type=int, default=0)
    parser.add_argument("--no-proxy", action="store_true")
    args = parser.parse_args(argv)
    for name in ("httpx", "httpx2", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url:
        raise SystemExit("run through `python -m config.devstack test -- ...`")
    shutil.rmtree(LOGS, ignore_errors=True)
    create_database(admin_url, DATABASE)
    janitor = Janitor(admin_url, DATABASE)
    dsn = with_database(admin_url, DATABASE)
    os.environ["DATABASE_URL"] = dsn
    os.environ["QUIVER_STATE_DIR"] = str(STATE)
    os.environ["QUIVER_AUDIT_CHECKPOINT_FILE"] = str(LOGS / "checkpoints.jsonl")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        text = run(args, dsn)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(admin_url, DATABASE)
        janitor.done()
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
