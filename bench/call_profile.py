"""Where a call's web CPU goes: POST /api/v1/tool-calls/execute (or /mcp
tools/call of call_tool) in this process through the WSGI application gunicorn
serves (/mcp beside Django with every middleware), against the calls bench's
upstream in a process of its own. Prints the CPU a call costs this process, all
its threads (the upstream client's share on the loop thread, and for /mcp the
gateway's loop and its worker thread, count), then the request thread's and the
upstream loop thread's cProfile, by own and by cumulative time.

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/call_profile.py

Options: ``--requests N`` (300), ``--way rest|mcp``, ``--top N`` (40), ``--dump
PATH`` (both profiles to PATH.request and PATH.loop), ``--queries`` (one call's
SQL)."""

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


def wsgi_post(key: str, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
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
    status: list[str] = []
    chunks = application(environ, lambda given, *_: status.append(given))
    answer = b"".join(chunks)
    getattr(chunks, "close", lambda: None)()
    return status[0], answer


def loop(args: argparse.Namespace, key: str) -> None:
    from calls.upstream import pool

    call: dict[str, Any] = {
        "name": "weather.get_forecast",
        "arguments": {"city": "Paris", "days": 2},
        "catalog": SLUG,
    }
    path, body = "/api/v1/tool-calls/execute", call
    if args.way == "mcp":
        path = "/mcp"
        params = {"name": "call_tool", "arguments": call}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

    def once() -> None:
        status, answer = wsgi_post(key, path, body)
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
    profile, on_loop = cProfile.Profile(), cProfile.Profile()
    loop = pool()
    loop.submit(_enable(on_loop), 5)
    profile.enable()
    for _ in range(args.requests):
        once()
    profile.disable()
    loop.submit(_disable(on_loop), 5)
    if args.dump:
        profile.dump_stats(f"{args.dump}.request")
        on_loop.dump_stats(f"{args.dump}.loop")
    for title, found in (("request thread", profile), ("loop thread", on_loop)):
        for order in ("tottime", "cumulative"):
            text = io.StringIO()
            stats = pstats.Stats(found, stream=text).sort_stats(order)
            stats.print_stats(args.top)
            print(f"== {title}, by {order}")
            print(text.getvalue())


async def _enable(profile: cProfile.Profile) -> None:
    profile.enable()  # on the loop's own thread


async def _disable(profile: cProfile.Profile) -> None:
    profile.disable()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--way", choices=["rest", "mcp"], default="rest")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--dump", help="write both profiles to DUMP.request/.loop")
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
