"""What a search over /mcp costs beside POST /api/v1/select (issue 32: at most
/select + 2 ms at p50; issue 21 had 5 ms), same queries, same run.

Run (one line):

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/mcp_overhead.py

Options: ``--size 200`` (MetaTool's 199 tools; 4076: Seal-Tools), ``--requests N``
(100), ``--warmup N`` (5), ``--keep``.

The catalog is built as ``bench/speed.py`` builds it. Two identical gunicorns
(``config.wsgi``, one worker each) so neither side answers from the cache the
other filled: each query goes as ``POST /api/v1/select`` to one and as an MCP
``tools/call search_tools`` (one stateless POST, as a handshake-era client sends
it after ``initialize``) to the other; the servers swap roles every query and
the two requests take turns going first. Client-measured, httpx, keep-alive.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench import speed  # noqa: E402  (sets up Django)
from identity.services.clients import create_api_client  # noqa: E402

# Issue 32: search_tools within 2 ms of /select at p50 (issue 21 had 5 ms).
TARGET_MS = 2.0
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def timed(client: httpx.Client, url: str, body: dict, **headers: str) -> float:
    started = time.perf_counter()
    response = client.post(url, json=body, headers=headers)
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise SystemExit(f"HTTP {response.status_code}: {response.text[:500]}")
    payload = response.json()
    if "result" in payload and payload["result"].get("isError"):
        raise SystemExit(f"MCP tool error: {payload['result']['content']}")
    return elapsed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    call_command("migrate", verbosity=0, interactive=False)
    speed.clean_up()
    log_dir = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    select_ms: list[float] = []
    mcp_ms: list[float] = []
    try:
        built = speed.build_catalog(args.size, True)
        slug = built.catalog.slug
        _, key = create_api_client(
            speed.CLIENT_NAME, "agent", catalogs=[slug], rate_limit_per_minute=0
        )
        pool = speed.query_pool(speed.dataset_for(args.size))
        queries = pool[: args.requests + args.warmup]
        with (
            speed.server(log_dir) as one,
            speed.server(log_dir) as two,
            httpx.Client(
                headers={"Authorization": f"Bearer {key}"}, timeout=300
            ) as client,
        ):
            for number, text in enumerate(queries):
                a, b = (one, two) if number % 2 else (two, one)

                def select(base: str = a.url, text: str = text) -> float:
                    body = {"catalog": slug, "query": text}
                    return timed(client, f"{base}/api/v1/select", body)

                def search(
                    base: str = b.url, text: str = text, rid: int = number
                ) -> float:
                    arguments = {"catalog": slug, "query": text}
                    body = {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "method": "tools/call",
                        "params": {"name": "search_tools", "arguments": arguments},
                    }
                    return timed(client, f"{base}/mcp", body, **MCP_HEADERS)

                if number % 4 < 2:
                    pair = (select(), search())
                else:
                    pair = tuple(reversed((search(), select())))
                if number >= args.warmup:
                    select_ms.append(pair[0])
                    mcp_ms.append(pair[1])
    finally:
        if not args.keep:
            speed.clean_up()
        shutil.rmtree(log_dir, ignore_errors=True)
    s50, m50 = float(np.median(select_ms)), float(np.median(mcp_ms))
    s95, m95 = (float(np.percentile(x, 95)) for x in (select_ms, mcp_ms))
    paired = float(np.median(np.subtract(mcp_ms, select_ms)))
    print(f"\n### /mcp search_tools vs /api/v1/select ({args.size} tools)\n")
    print("| | requests | p50 ms | p95 ms |\n|---|---:|---:|---:|")
    print(f"| /api/v1/select | {len(select_ms)} | {s50:.1f} | {s95:.1f} |")
    print(f"| /mcp search_tools | {len(mcp_ms)} | {m50:.1f} | {m95:.1f} |")
    verdict = "ok" if m50 - s50 <= TARGET_MS else "OVER"
    print(
        f"\n/mcp - /select at p50: {m50 - s50:+.1f} ms (target <= +{TARGET_MS:g} ms: "
        f"{verdict}); the same query's /mcp minus its /select, median: "
        f"{paired:+.1f} ms; load avg {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
