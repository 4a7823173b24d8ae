"""Where a call's web CPU goes: POST /api/v1/tool-calls/execute (or /mcp
tools/call of call_tool) in this process through the WSGI application gunicorn
serves (/mcp beside Django with every middleware), against the calls bench's
upstream in a process of its own. Prints the CPU a call costs this process, all
its threads (the upstream client's share on the loop thread, and for /mcp the
gateway's loop and its worker thread, count), then the request thread's and the
upstream loop thread's cProfile, by own and by cumulative time.

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/call_profile.py

Options: ``--requests N`` (300), ``--way rest|mcp``, ``--protocol`` (of /mcp:
2026-07-28, as the SDK's Client, or 2025-06-18), ``--top N`` (40), ``--dump
PATH`` (the profiles to PATH.request, PATH.upstream and, for /mcp,
PATH.gateway), ``--queries`` (one call's SQL)."""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._loadstack import (  # noqa: E402
    create_database,
    drop_database,
    with_database,
)
from bench.call_overhead import SLUG, UPSTREAM_PAGE, build, start_line, stop_line  # noqa: E402

DATABASE = "quiver_bench_callprof"
MODERN, HANDSHAKE = "2026-07-28", "2025-06-18"


def wsgi_post(
    key: str, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[str, bytes]:
    """One POST through ``config.wsgi.application`` (/mcp beside Django, as
    gunicorn serves them), in this thread."""
    from config.wsgi import application

    data = json.dumps(body).encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "localhost",
        "HTTP_AUTHORIZATION": f"Bearer {key}",
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    environ.update(headers or {})
    status: list[str] = []
    chunks = application(environ, lambda given, *_: status.append(given))
    answer = b"".join(chunks)
    getattr(chunks, "close", lambda: None)()
    return status[0], answer


def loop(args: argparse.Namespace, key: str) -> None:
    call: dict[str, Any] = {
        "name": "weather.get_forecast",
        "arguments": {"city": "Paris", "days": 2},
        "catalog": SLUG,
    }
    path, body, headers = "/api/v1/tool-calls/execute", call, {}
    if args.way == "mcp":
        path = "/mcp"
        params: dict[str, Any] = {"name": "call_tool", "arguments": call}
        if args.protocol == MODERN:  # as the SDK's Client sends it by default
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            headers = {
                "HTTP_MCP_PROTOCOL_VERSION": MODERN,
                "HTTP_MCP_METHOD": "tools/call",
                "HTTP_MCP_NAME": "call_tool",
            }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

    def once() -> None:
        status, answer = wsgi_post(key, path, body, headers)
        if not status.startswith("200") or b'"isError":true' in answer:
            raise SystemExit(f"{path}: {status} {answer[:500]!r}")

    for _ in range(20):
        once()
    if args.queries:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as queries:
            once()
        for query in queries.captured_queries:
            print(f"SQL: {query['sql'][:300]}")
    cpu, main, wall = time.process_time(), time.thread_time(), time.perf_counter()
    for _ in range(args.requests):
        once()
    cpu = (time.process_time() - cpu) / args.requests * 1000
    main = (time.thread_time() - main) / args.requests * 1000
    wall = (time.perf_counter() - wall) / args.requests * 1000
    print(
        f"{args.way}, unprofiled: {cpu:.2f} ms CPU a call (process; the request's "
        f"thread {main:.2f}, other threads {cpu - main:.2f}), {wall:.2f} ms wall"
    )
    profiles = _profiled(args, once)
    if args.dump:
        for title, found in profiles.items():
            found.dump_stats(f"{args.dump}.{title.split()[0]}")
    for title, found in profiles.items():
        for order in ("tottime", "cumulative"):
            text = io.StringIO()
            stats = pstats.Stats(found, stream=text).sort_stats(order)
            stats.print_stats(args.top)
            print(f"== {title}, by {order}")
            print(text.getvalue())


def _profiled(args: argparse.Namespace, once: Any) -> dict[str, cProfile.Profile]:
    """cProfile of the request thread, the upstream pool's loop thread and, for
    /mcp, the gateway's loop thread (the SDK server's share)."""
    from calls.upstream import pool
    from gateway.wsgi import _loop

    loops = {"request thread": None, "upstream thread": pool()}
    if args.way == "mcp":
        loops["gateway thread"] = _loop()
    profiles = {title: cProfile.Profile() for title in loops}
    for title, loop in loops.items():
        if loop is not None:
            loop.submit(_enable(profiles[title]), 5)
    profiles["request thread"].enable()
    for _ in range(args.requests):
        once()
    profiles["request thread"].disable()
    for title, loop in loops.items():
        if loop is not None:
            loop.submit(_disable(profiles[title]), 5)
    return profiles


async def _enable(profile: cProfile.Profile) -> None:
    profile.enable()  # on the loop's own thread


async def _disable(profile: cProfile.Profile) -> None:
    profile.disable()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--way", choices=["rest", "mcp"], default="rest")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument(
        "--protocol",
        choices=[MODERN, HANDSHAKE],
        default=MODERN,
        help="the MCP protocol of --way mcp (the SDK Client's default: the first)",
    )
    parser.add_argument(
        "--dump", help="write the profiles to DUMP.request/.upstream/.gateway"
    )
    parser.add_argument("--queries", action="store_true", help="print one call's SQL")
    args = parser.parse_args(argv)
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url:
        raise SystemExit("run through `python -m config.devstack test -- ...`")
    create_database(admin_url, DATABASE)
    os.environ["DATABASE_URL"] = with_database(admin_url, DATABASE)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", os.urandom(32).hex())
    os.environ["DEBUG"] = "false"
    upstream_command = [sys.executable, str(ROOT / "bench" / "_upstream.py")]
    upstream, url = start_line([*upstream_command, str(UPSTREAM_PAGE)], "upstream")
    try:
        key = build(url, 0)
        loop(args, key)
    finally:
        stop_line(upstream)
        from django.db import connections

        connections.close_all()
        drop_database(admin_url, DATABASE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
