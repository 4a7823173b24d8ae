"""Quiver at tenant scale: ``/select`` over a Zipf mix of many small catalogs beside
the same requests on one warm catalog, what a web worker then holds (its RSS,
what it keeps for its catalogs, the evictions), and a call by name for a key that
sees one catalog beside one that sees them all.

Run (one line; ``make bench-tenants``):

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/tenants.py

Options: ``--counts 1,50,200,500`` (catalogs in the mix), ``--requests N`` (300 a
mix), ``--warmup N`` (30), ``--calls N`` (100 rounds of calls by name),
``--simulate 2000`` (catalogs of the simulated rows), ``--tight-mb 16``,
``--reads N`` (40 rounds of reads; 0: none), ``--keep``.

The tenants (``bench/_tenants.py``): catalogs of 8 to 150 tools (median 25) cut
from the dev sets' tools, vectors written as the embedding job writes them. The
processes: gunicorn as ``make run`` starts it (``config.gunicorn``: 2 threaded
workers), two fresh ones for each row: one answers the mix, with the default
``QUIVER_MEMORY_BUDGET_MB`` (the last row: ``--tight-mb``, 16, so that catalogs
are evicted), the other the same queries on ``tenant-0000`` alone, for a key that
sees only it (the one-catalog baseline; a server of its own, so neither answers
from a cache the other filled). Each mix draws its catalogs by Zipf's law
(s = 1.1) among the row's first catalogs and a dev query of the catalog's data
set; the two servers are asked in turns, each going first every other request,
so load hits both alike. Client-measured, httpx, keep-alive. After the mix
``/metrics`` gives the mix server's kept bytes, snapshots and evictions, and
``/proc`` its workers' RSS.

Calls by name (on the largest count's server): a tool only one tenant holds,
called over ``/mcp`` by its own name (``tools/call``, no catalog named: the
catalog is found by name) and by ``POST /api/v1/tool-calls/execute``, in turns by
a key that sees that catalog alone and by one that sees every catalog. The tool
has no source, so each call is resolved, checked, refused with a 409 ("no source
to run it") and audited: everything a call costs before its upstream.

Reads (``bench/_reads.py``, on a server of their own): every read a key makes,
``/mcp`` ``search_tools``, ``get_tool_details`` and ``tools/list`` (both eras) and
the REST lists (catalogs, tools, jobs, reviews, the audit log; first page and the
next), in turns by a key that sees the largest catalog alone and one that sees
every catalog.

The simulated rows replay a Zipf mix of ten requests a catalog over
``--simulate`` catalogs against the process's store (``selection.adapters.kept``)
with snapshot sizes measured here (bytes a tool, fitted on real snapshots), at
the default budget and at ``--tight-mb``: memory and evictions only, no latency.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench import _reads, _tenants  # noqa: E402
from bench import speed as sp  # noqa: E402  (sets up Django)
from bench._loadstack import gunicorn  # noqa: E402
from catalog.models import Catalog  # noqa: E402
from identity.models import ApiClient  # noqa: E402
from identity.services.clients import create_api_client  # noqa: E402
from selection.adapters.kept import MB, Store, deep_size  # noqa: E402
from selection.adapters.snapshots import get_snapshot  # noqa: E402

ZIPF_S = 1.1
SEED = 45
KEY_PREFIX = "bench-tenants"
TOKEN = "bench-tenants-metrics-0123456789"
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def say(message: str) -> None:
    sp.say(message)


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def zipf_mix(count: int, total: int, rng: random.Random) -> list[int]:
    """``total`` catalog numbers among ``count``, the first the most asked."""
    weights = [1.0 / (rank**ZIPF_S) for rank in range(1, count + 1)]
    return rng.choices(range(count), weights=weights, k=total)


def clean_up() -> None:
    for catalog in Catalog.objects.filter(slug__startswith=f"{_tenants.PREFIX}-"):
        sp.drop_catalog(catalog)
    for client in ApiClient.objects.filter(name__startswith=KEY_PREFIX):
        client.user.delete()


def key_for(name: str, slugs: list[str], scope: str = "agent") -> str:
    _, key = create_api_client(
        f"{KEY_PREFIX}-{name}", scope, catalogs=slugs, rate_limit_per_minute=0
    )
    return key


def timed(client: httpx.Client, url: str, body: dict, key: str) -> tuple[float, Any]:
    started = time.perf_counter()
    response = client.post(
        url, json=body, headers={"Authorization": f"Bearer {key}", **MCP_HEADERS}
    )
    return (time.perf_counter() - started) * 1000, response


def ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def scrape(url: str) -> dict[str, float]:
    """Per-worker maxima and sums of the memory series (pid label dropped)."""
    text = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    found: dict[str, float] = {}
    for line in text.text.splitlines():
        match = re.match(r"(quiver_catalog_\w+)(\{[^}]*\})? ([0-9.e+-]+)$", line)
        if not match:
            continue
        name, labels, value = match.group(1), match.group(2) or "", float(match[3])
        kind = re.search(r'(kind|how)="(\w+)"', labels)
        key = f"{name}:{kind.group(2)}" if kind else name
        if name.endswith("_total"):
            found[key] = found.get(key, 0.0) + value
        else:
            found[key] = max(found.get(key, 0.0), value)
    return found


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def mix_row(
    count: int,
    args: argparse.Namespace,
    tenants: list[Any],
    pools: dict[str, Any],
    budget_mb: int | None = None,
) -> dict[str, Any]:
    """Two fresh servers: the mix over ``count`` catalogs on one (its budget
    ``budget_mb``, None: the default), the same queries on the one-catalog
    baseline on the other, in turns."""
    rng = random.Random(SEED + count)
    slugs = [t.slug for t in tenants[:count]]
    many = key_for(f"mix-{count}-{budget_mb}", slugs)
    one = key_for(f"one-{count}-{budget_mb}", [tenants[0].slug])
    drawn = zipf_mix(count, args.warmup + args.requests, rng)
    requests = [(slugs[n], rng.choice(pools[tenants[n].dataset])) for n in drawn]
    times: dict[str, list[float]] = {"mix": [], "one": []}
    with ExitStack() as stack:
        if budget_mb is not None:
            os.environ["QUIVER_MEMORY_BUDGET_MB"] = str(budget_mb)
        web = stack.enter_context(gunicorn(2, args.logs))
        os.environ.pop("QUIVER_MEMORY_BUDGET_MB", None)
        alone = stack.enter_context(gunicorn(2, args.logs))
        client = stack.enter_context(httpx.Client(timeout=300))
        loads = [load()]
        for number, (slug, text) in enumerate(requests):
            sides = [("mix", web.url, many, slug), ("one", alone.url, one, slugs[0])]
            for side, base, key, catalog in sides[:: 1 if number % 2 else -1]:
                body = {"catalog": catalog, "query": text}
                elapsed, response = timed(client, f"{base}/api/v1/select", body, key)
                if response.status_code != 200:
                    raise SystemExit(f"/select: {response.status_code} {response.text}")
                if number >= args.warmup:
                    times[side].append(elapsed)
        loads.append(load())
        found = scrape(web.url)
        rss = [rss_mb(pid) for pid in web.worker_pids()]
    kept = sum(
        found.get(f"quiver_catalog_memory_resident_bytes:{kind}", 0.0)
        for kind in ("snapshot", "answer", "definition")
    )
    return {
        "count": count,
        "p50": ms(times["mix"], 50),
        "p95": ms(times["mix"], 95),
        "one50": ms(times["one"], 50),
        "one95": ms(times["one"], 95),
        "rss": max(rss),
        "kept": kept / MB,
        "budget": found.get("quiver_catalog_memory_budget_bytes", 0.0) / MB,
        "snapshots": found.get("quiver_catalog_snapshots_resident", 0.0),
        "evicted": found.get("quiver_catalog_memory_evictions_total:snapshot", 0.0),
        "built": found.get("quiver_catalog_snapshot_builds_total:built", 0.0),
        "load": "-".join(loads),
    }


def unique_tool(tenants: list[Any], specs: dict[str, list]) -> tuple[Any, str]:
    """A tenant and a tool only it holds that takes no required argument (so a
    call with ``{}`` passes the argument check and reaches the source check)."""
    held: dict[str, int] = {}
    for tenant in tenants:
        for index in tenant.tools:
            name = specs[tenant.dataset][index].name
            held[name] = held.get(name, 0) + 1
    for tenant in tenants:
        for index in tenant.tools:
            spec = specs[tenant.dataset][index]
            if held[spec.name] == 1 and not (spec.parameters or {}).get("required"):
                return tenant, spec.name
    raise SystemExit("no tenant holds a tool of its own without arguments")


def calls_row(
    args: argparse.Namespace, tenants: list[Any], held: tuple[Any, str]
) -> dict[str, Any]:
    """p50 and p95 of calls by name for a key seeing one catalog and one seeing
    all of them, over /mcp (catalog found by name) and REST (catalog named)."""
    slug, tool = held[0].slug, held[1]
    keys = {
        "1": key_for("call-one", [slug]),
        str(len(tenants)): key_for("call-all", [t.slug for t in tenants]),
    }
    found: dict[tuple[str, str], list[float]] = {}
    with gunicorn(2, args.logs) as web, httpx.Client(timeout=300) as client:
        loads = [load()]
        for number in range(args.calls + 10):
            order = list(keys.items())
            if number % 2:
                order.reverse()
            for seen, key in order:
                for way, url, body in (
                    ("mcp", f"{web.url}/mcp", mcp_call(tool, number)),
                    ("rest", f"{web.url}/api/v1/tool-calls/execute", rest(slug, tool)),
                ):
                    elapsed, response = timed(client, url, body, key)
                    check_refused(way, response)
                    if number >= 10:
                        found.setdefault((way, seen), []).append(elapsed)
        loads.append(load())
    return {"samples": found, "keys": list(keys), "load": "-".join(loads)}


def reads_row(
    args: argparse.Namespace,
    tenants: list[Any],
    specs: dict[str, list],
    pools: dict[str, Any],
) -> tuple[_reads.Reader, str]:
    """Every read a key makes, for a key of one catalog and one of all of them,
    on a fresh server (``bench/_reads.py``), with the load before and after."""
    plan = _reads.prepare(tenants, specs, key_for)
    home = next(t for t in tenants if t.slug == plan.home)
    queries = list(pools[home.dataset])[:50]
    say(f"reads: {plan.home} and all {len(tenants)} catalogs (load {load()})")
    with gunicorn(2, args.logs) as web:
        loads = [load()]
        reader = _reads.run(web.url, plan, queries, args.reads, 5)
        loads.append(load())
    return reader, "-".join(loads)


def mcp_call(tool: str, number: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}},
    }


def rest(slug: str, tool: str) -> dict[str, Any]:
    return {"catalog": slug, "name": tool, "arguments": {}}


def check_refused(way: str, response: httpx.Response) -> None:
    """The call found its tool and was refused for its missing source."""
    text = response.text
    if "no source to run it" not in text:
        raise SystemExit(f"{way}: {response.status_code} {text[:400]}")


def snapshot_bytes(tenants: list[Any]) -> tuple[float, float]:
    """Bytes of a snapshot: (fixed, a tool), fitted on real snapshots here."""
    sizes, bytes_ = [], []
    for tenant in tenants[:24]:
        catalog = Catalog.objects.get(slug=tenant.slug)
        snapshot, names = get_snapshot(catalog)
        sizes.append(len(snapshot.tools))
        bytes_.append(deep_size((snapshot, names)))
    slope, fixed = np.polyfit(sizes, bytes_, 1)
    return float(fixed), float(slope)


def simulate(
    count: int, requests: int, fit: tuple[float, float], budget_mb: int
) -> dict[str, Any]:
    """The store's evictions and kept bytes for a Zipf mix over ``count``
    catalogs of the tenants' sizes (snapshots only), within ``budget_mb``."""
    rng = random.Random(SEED + count)
    sizes = [_tenants.size_of(rng) for _ in range(count)]
    settings.QUIVER_MEMORY_BUDGET_MB = budget_mb
    store = Store()
    fixed, slope = fit
    evicted, built = 0, 0
    for number in zipf_mix(count, requests, rng):
        if store.get(("snapshot", number)) is None:
            built += 1
            store.put(("snapshot", number), number, int(fixed + slope * sizes[number]))
    kept = len(store.keys("snapshot"))
    evicted = built - kept
    return {
        "kept": store.kept_bytes() / MB,
        "snapshots": kept,
        "evicted": evicted,
        "built": built,
        "budget": budget_mb,
        "count": count,
    }


def table(rows: list[dict[str, Any]], simulated: list[dict[str, Any]]) -> str:
    lines = [
        "| catalogs | p50 ms | p95 ms | one catalog p50 / p95 ms | p95 ratio | "
        "worker RSS MB (largest) | kept MB / budget | snapshots kept | "
        "snapshots built (both workers) | evictions | load (1 min, before-after) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['count']} | {r['p50']:.1f} | {r['p95']:.1f} | "
            f"{r['one50']:.1f} / {r['one95']:.1f} | {r['p95'] / r['one95']:.2f}x | "
            f"{r['rss']:.0f} | {r['kept']:.1f} / {r['budget']:.0f} | "
            f"{r['snapshots']:.0f} | {r['built']:.0f} | {r['evicted']:.0f} | "
            f"{r['load']} |"
        )
    for r in simulated:
        lines.append(
            f"| {r['count']} (simulated, one worker) | - | - | - | - | - | "
            f"{r['kept']:.1f} / {r['budget']} | {r['snapshots']} | {r['built']} | "
            f"{r['evicted']} | - |"
        )
    return "\n".join(lines)


def calls_table(result: dict[str, Any]) -> str:
    one, all_ = result["keys"]
    lines = [
        f"| call by name | key sees {one}: p50 / p95 ms | key sees {all_}: p50 / "
        "p95 ms | p50 ratio |",
        "|---|---:|---:|---:|",
    ]
    for way, label in (("mcp", "/mcp tools/call"), ("rest", "REST execute")):
        a, b = result["samples"][(way, one)], result["samples"][(way, all_)]
        lines.append(
            f"| {label} | {ms(a, 50):.1f} / {ms(a, 95):.1f} | "
            f"{ms(b, 50):.1f} / {ms(b, 95):.1f} | {ms(b, 50) / ms(a, 50):.2f}x |"
        )
    return "\n".join(lines) + f"\n\nload during the calls: {result['load']}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default="1,50,200,500")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--simulate", type=int, default=2000)
    parser.add_argument("--tight-mb", type=int, default=16)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    logging.getLogger("httpx").setLevel(logging.WARNING)
    os.environ["QUIVER_METRICS_TOKEN"] = TOKEN
    call_command("migrate", verbosity=0, interactive=False)
    clean_up()
    args.logs = Path(tempfile.mkdtemp(prefix="bench-tenants-"))
    try:
        specs = {d: sp.load_specs(d) for d in _tenants.DATASETS}
        pools = {d: sp.load_queries(d) for d in _tenants.DATASETS}
        tenants = _tenants.plan(max(counts), specs, SEED)
        _tenants.build(tenants, specs, say)
        held = unique_tool(tenants, specs)
        fit = snapshot_bytes(tenants)
        rows = []
        for count in counts:
            say(f"mix over {count} catalogs (load {load()})")
            rows.append(mix_row(count, args, tenants, pools))
        if args.tight_mb:
            say(f"mix over {max(counts)} catalogs, {args.tight_mb} MB (load {load()})")
            rows.append(mix_row(max(counts), args, tenants, pools, args.tight_mb))
        say(f"calls by name: {held[1]} of {held[0].slug} (load {load()})")
        calls = calls_row(args, tenants, held)
        reads = reads_row(args, tenants, specs, pools) if args.reads else None
        total = 10 * args.simulate  # every catalog asked, the first ones often
        simulated = [
            simulate(args.simulate, total, fit, mb)
            for mb in (int(settings.QUIVER_MEMORY_BUDGET_MB), args.tight_mb)
        ]
    finally:
        if not args.keep:
            clean_up()
        shutil.rmtree(args.logs, ignore_errors=True)
    print(
        f"\n### /select over a Zipf mix of small catalogs ({args.requests} requests)\n"
    )
    print(table(rows, simulated))
    print(
        f"\nsnapshot bytes fitted: {fit[0] / 1024:.0f} KiB + {fit[1] / 1024:.1f} KiB "
        "a tool"
    )
    print(f"\n### Calls by name ({args.calls} rounds)\n")
    print(calls_table(calls))
    if reads is not None:
        print(f"\n### Reads ({args.reads} rounds)\n")
        print(_reads.table(reads[0]) + f"\n\nload during the reads: {reads[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
