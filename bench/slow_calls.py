"""/select while slow tool calls run (issue 30, point 3): p50 of ``POST
/api/v1/select`` (and of /healthz and /mcp's search_tools) with 8 slow calls in
flight against the same with none; target: within 1.5x.

Run (one line; ``make bench-slow-calls``)::

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/slow_calls.py

Options: ``--requests N`` (150 per phase), ``--slow N`` (8 calls in flight),
``--slow-s S`` (40: how long each slow call waits upstream; at most
QUIVER_CALL_TIMEOUT_MAX_SECONDS).

The same processes as ``make run``: the script works in its own database
(``quiver_bench_slowcalls``: migrated and bootstrapped with the demo catalog, as
``make run`` does; dropped at the end), with the Celery worker and gunicorn
started as ``config.devstack`` starts them (``config/gunicorn.py``: 2 threaded
workers). The upstream is the tests' real MCP server (tests/upstream.py) in a
process of its own; its ``slow_echo`` answers after ``--slow-s`` seconds. One
key makes the slow calls (half over REST, half as /mcp ``call_tool``), each
thread sending the next as soon as one ends; another key selects. Phases, each
``--requests`` requests one after another on a keep-alive connection: quiet,
loaded (once ``--slow`` calls are in flight: ``started`` events without an
outcome in the database), quiet again (the two quiet phases pooled). Queries vary
(no answer cache). Client-measured; prints one table.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench._loadstack import (  # noqa: E402
    Janitor,
    MakeRun,
    create_database,
    drop_database,
    wait_embedded,
    with_database,
)

DATABASE = "quiver_bench_slowcalls"
LOGS = ROOT / ".quiver" / "bench-slowcalls-logs"
STATE = ROOT / ".quiver" / "bench-slowcalls"
TASKS = [
    "what will the weather be like tomorrow in",
    "send a short message to my colleague about",
    "find the open invoices of the customer",
    "translate this paragraph into german for",
    "book a meeting room for the team on",
    "search the documentation for how to configure",
]
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}
ECHO = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "seconds": {"type": "number"}},
    "required": ["text"],
    "additionalProperties": False,
}


def say(message: str) -> None:
    print(f"[slow-calls] {message}", file=sys.stderr, flush=True)


def prepare(upstream_url: str) -> tuple[str, str]:
    """Migrate and bootstrap as ``make run`` does; the upstream as a source with
    its read-only ``slow_echo``; a key for the calls and one for selections."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from catalog.services import create_tool, ensure_default_catalog
    from catalog.spec import ToolSpec
    from identity.services.clients import create_api_client
    from sources.models import Source, SourceTool

    say("migrating and bootstrapping ...")
    call_command("migrate", verbosity=0, interactive=False)
    call_command("bootstrap", stdout=open(os.devnull, "w"))  # noqa: SIM115
    catalog = ensure_default_catalog()
    tool = create_tool(
        catalog,
        ToolSpec(
            name="slow.slow_echo",
            description="Echo a text back after waiting some seconds.",
            parameters=ECHO,
            annotations={"readOnlyHint": True},
        ),
        actor=None,
    )
    source = Source.objects.create(catalog=catalog, name="slow", url=upstream_url)
    SourceTool.objects.create(source=source, tool=tool, upstream_name="slow_echo")
    keys = [
        create_api_client(name, "agent", catalogs="*", rate_limit_per_minute=0)[1]
        for name in ("bench-slow-caller", "bench-selector")
    ]
    connections.close_all()
    return keys[0], keys[1]


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


IN_FLIGHT = """
SELECT count(*) FROM audit_auditevent s
WHERE s.event_type = 'tool_call' AND s.output @> '{"outcome": "started"}'
  AND s.created > now() - interval '10 minutes'
  AND NOT EXISTS (
    SELECT 1 FROM audit_auditevent o
    WHERE o.event_type = 'tool_call' AND o.input ? 'call_id'
      AND (o.input ->> 'call_id')::bigint = s.id)
"""


def in_flight(dsn: str) -> int:
    """Calls started and not ended (a ``started`` event no outcome names)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(IN_FLIGHT).fetchone()
    return int(row[0]) if row else 0


class SlowCalls:
    """``count`` threads, each sending one slow call after another until
    stopped: even ones over REST, odd ones as /mcp call_tool."""

    def __init__(self, url: str, key: str, count: int, seconds: float) -> None:
        self.stop = threading.Event()
        self.codes: list[int] = []
        self.lock = threading.Lock()
        call = {
            "name": "slow.slow_echo",
            "arguments": {"text": "x", "seconds": seconds},
        }
        self.threads = [
            threading.Thread(
                target=self._run, args=(url, key, call, n % 2 == 1), daemon=True
            )
            for n in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def _run(self, url: str, key: str, call: dict[str, Any], mcp: bool) -> None:
        headers = {"Authorization": f"Bearer {key}", **(MCP_HEADERS if mcp else {})}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            while not self.stop.is_set():
                try:
                    if mcp:
                        code = _mcp(client, "call_tool", call).status_code
                    else:
                        code = client.post("/api/v1/tool-calls/execute", json=call)
                        code = code.status_code
                except httpx.HTTPError:
                    return  # the stack went away at the end
                with self.lock:
                    self.codes.append(code)
                if code != 200:
                    time.sleep(0.5)  # refused (a limit): try again shortly


def _mcp(client: httpx.Client, tool: str, arguments: dict[str, Any]) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return client.post("/mcp", json=body)


def phase(url: str, key: str, requests: int, base: int) -> dict[str, list[float]]:
    """``requests`` of each: /select, /mcp search_tools, /healthz (in turns)."""
    timings: dict[str, list[float]] = {"select": [], "search": [], "healthz": []}
    headers = {"Authorization": f"Bearer {key}", **MCP_HEADERS}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        for n in range(requests):
            query = {"query": f"{TASKS[n % len(TASKS)]} {base + n}"}
            for name in timings:
                started = time.perf_counter()
                response = _send(client, name, query)
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code >= 500 and name != "healthz":
                    raise SystemExit(f"{name}: {response.status_code} {response.text}")
                timings[name].append(elapsed)
    return timings


def _send(client: httpx.Client, name: str, query: dict[str, str]) -> httpx.Response:
    if name == "select":
        return client.post("/api/v1/select", json=query)
    if name == "search":
        return _mcp(client, "search_tools", query)
    return client.get("/healthz")


def measure(args: Any, url: str, dsn: str, keys: tuple[str, str]) -> dict[str, Any]:
    caller, selector = keys
    say("warming up ...")
    phase(url, selector, 10, 90_000)
    say("quiet ...")
    quiet = phase(url, selector, args.requests, 0)
    slow = SlowCalls(url, caller, args.slow, args.slow_s)
    deadline = time.monotonic() + 60
    while in_flight(dsn) < args.slow and time.monotonic() < deadline:
        time.sleep(0.1)
    at_start = in_flight(dsn)
    say(f"loaded: {at_start} slow calls in flight ...")
    loaded = phase(url, selector, args.requests, 10_000)
    at_end = in_flight(dsn)
    slow.stop.set()
    say("quiet again (the slow calls finish first) ...")
    deadline = time.monotonic() + args.slow_s + 15
    while in_flight(dsn) and time.monotonic() < deadline:
        time.sleep(0.2)
    again = phase(url, selector, args.requests, 20_000)
    for name in quiet:
        quiet[name] += again[name]
    return {
        "quiet": quiet,
        "loaded": loaded,
        "in_flight": (at_start, at_end),
        "refused": sum(code != 200 for code in slow.codes),
    }


def table(found: dict[str, Any], args: Any) -> str:
    def p(values: list[float], q: float) -> float:
        return float(np.percentile(values, q))

    quiet, loaded = found["quiet"], found["loaded"]
    start, end = found["in_flight"]
    lines = [
        f"/select with {args.slow} slow calls in flight ({args.slow_s:g} s each, half "
        f"REST, half /mcp call_tool) vs quiet; gunicorn as make run "
        f"(config/gunicorn.py), {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f}",
        "",
        "| | requests | p50 ms | p95 ms | p50 loaded / quiet |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, label in (
        ("select", "POST /api/v1/select"),
        ("search", "/mcp search_tools"),
        ("healthz", "GET /healthz"),
    ):
        for phase_name, values in (("quiet", quiet[name]), ("loaded", loaded[name])):
            ratio = ""
            if phase_name == "loaded":
                ratio = f"{p(values, 50) / p(quiet[name], 50):.2f}x"
            lines.append(
                f"| {label}, {phase_name} | {len(values)} | {p(values, 50):.1f} | "
                f"{p(values, 95):.1f} | {ratio} |"
            )
    worst = p(loaded["select"], 50) / p(quiet["select"], 50)
    verdict = "ok" if worst <= 1.5 else "OVER"
    lines += [
        "",
        f"slow calls in flight when the loaded phase began / ended: {start} / {end}; "
        f"slow calls refused by a limit: {found['refused']}",
        f"/select p50 loaded / quiet: {worst:.2f}x (target <= 1.5x: {verdict})",
    ]
    return "\n".join(lines)


def run(args: Any, dsn: str) -> str:
    upstream, upstream_url = start_upstream()
    try:
        keys = prepare(upstream_url)
        env = {**os.environ, "DEBUG": "false"}
        env.setdefault("SECRET_KEY", os.urandom(32).hex())
        stack = MakeRun(env, LOGS, "bench-slowcalls")
        try:
            stack.wait_ready()
            say("waiting for the worker to embed the demo catalog ...")
            wait_embedded(dsn)
            found = measure(args, stack.url, dsn, keys)
        finally:
            stack.stop()
    finally:
        if upstream.stdin is not None:
            upstream.stdin.close()
        upstream.wait(timeout=60)
    return table(found, args)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=150)
    parser.add_argument("--slow", type=int, default=8)
    parser.add_argument("--slow-s", type=float, default=40.0)
    args = parser.parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url:
        raise SystemExit("run through `python -m config.devstack test -- ...`")
    shutil.rmtree(LOGS, ignore_errors=True)
    say(f"creating the database {DATABASE}")
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
