"""Metrics scrape: what ``GET /metrics`` costs against a large installation.

Run (``make bench-metrics``)::

    .venv/bin/python -m config.devstack test -- .venv/bin/python \\
        bench/metrics_scrape.py [--tools 100000] [--jobs 50000] [--scrapes 40]

The script works in its own database (``quiver_bench_metrics``, created and
migrated, dropped at the end) and fills it like a large installation: ``--tools``
tools in 10 catalogs (1% waiting for their embedding), ``--jobs`` finished jobs
(10 queued), ``--approvals`` approvals (1% pending), ``--sources`` sources, and
then, for the second table row, ``--backlog`` audit rows not yet sealed (a sealer
far behind). In a multiprocess directory of ``--processes`` processes (each
counted 200 requests over 40 routes, 50 selections and 50 calls, like a busy
gunicorn and worker), it renders the scrape ``--scrapes`` times
(``telemetry.exposition.render``, the body ``/metrics`` sends) and prints, per
row, the p50 and max of a whole scrape, of its database part
(``quiver_metrics_database_duration_seconds``) and the scrape's size; then what
counting costs a request on the hot path (microseconds, best of five).

Progress goes to stderr; the table to stdout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _benchdb import use_bench_database  # noqa: E402

DATABASE = "quiver_bench_metrics"
CHILD = """
import random
from telemetry import metrics
routes = [f"/api/v1/route{n}/<pk>/" for n in range(40)]
for n in range(200):
    metrics.request_answered(random.choice(routes), "GET", 200, random.random())
for n in range(50):
    metrics.selection_answered("cat-%d" % (n % 10), "hybrid", "api", cached=n % 3 == 0,
                               no_tool=False, degraded=False, seconds=0.01)
    metrics.tool_call_recorded("cat-%d/src" % (n % 10), "ran")
    metrics.upstream_answered("cat-%d/src" % (n % 10), "ran", 0.05)
"""


def say(message: str) -> None:
    print(f"[metrics] {message}", file=sys.stderr, flush=True)


def fill(args: argparse.Namespace) -> None:
    """The installation's rows, in bulk (seconds to a minute)."""
    from django.utils import timezone

    from calls.models import Approval
    from catalog.models import Catalog, Tool
    from jobs.models import Job
    from sources.models import Source

    catalogs = [
        Catalog.objects.get_or_create(slug=f"cat-{n}", defaults={"name": f"C{n}"})[0]
        for n in range(10)
    ]
    tools = [
        Tool(
            catalog=catalogs[n % 10],
            name=f"tool_{n}",
            provider_name=f"tool_{n}",
            description="A tool.",
            content_hash=f"{n:064x}",
            embedding_status="pending" if n % 100 == 0 else "ready",
        )
        for n in range(args.tools)
    ]
    Tool.objects.bulk_create(tools, batch_size=5000)
    say(f"{args.tools} tools")
    jobs = [
        Job(kind="import", catalog=catalogs[n % 10], state="succeeded")
        for n in range(args.jobs)
    ] + [Job(kind="import", catalog=catalogs[0]) for _ in range(10)]
    Job.objects.bulk_create(jobs, batch_size=5000)
    say(f"{args.jobs} jobs")
    first = Tool.objects.filter(catalog=catalogs[0]).first()
    approvals = [
        Approval(
            catalog=catalogs[0],
            tool=first,
            tool_name="tool_0",
            tool_version=1,
            arguments_hash=f"{n:064x}",
            requester_name="bench",
            status="pending" if n % 100 == 0 else "used",
            expires=timezone.now(),
        )
        for n in range(args.approvals)
    ]
    Approval.objects.bulk_create(approvals, batch_size=5000)
    Source.objects.bulk_create(
        Source(catalog=catalogs[n % 10], name=f"src{n}", url="http://127.0.0.1:9/mcp")
        for n in range(args.sources)
    )
    say(f"{args.approvals} approvals, {args.sources} sources")


def backlog(count: int) -> None:
    """``count`` unsealed audit rows (as a sealer far behind leaves them)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_auditevent (event_type, actor_name, request_id, "
            "catalog_slug, catalog_version, summary, input, output, created, "
            "prev_hash, hash_version, key_id, search_tokens) "
            "SELECT 'selection', 'bench', %s, 'cat-0', 1, 'x', '{}', '{}', now(), "
            "'', 2, '', '{}' FROM generate_series(1, %s)",
            [str(uuid.uuid4()), count],
        )
    say(f"{count} unsealed audit rows")


def processes(count: int) -> None:
    env = dict(os.environ)
    for _ in range(count):
        subprocess.run([sys.executable, "-c", CHILD], env=env, check=True, cwd=ROOT)


def measure(scrapes: int) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    from telemetry.exposition import render

    whole, database, size = [], [], 0
    for _ in range(scrapes):
        began = time.perf_counter()
        body = render()
        whole.append((time.perf_counter() - began) * 1000)
        size = len(body)
        for family in text_string_to_metric_families(body.decode()):
            if family.name == "quiver_metrics_database_duration_seconds":
                database.append(family.samples[0].value * 1000)
    return {
        "p50": statistics.median(whole),
        "max": max(whole),
        "db p50": statistics.median(database),
        "db max": max(database),
        "bytes": size,
    }


def per_request() -> list[tuple[str, float]]:
    """Microseconds a request pays to be counted, in multiprocess mode (best of
    five runs of 20,000): what the hot path adds, whatever the scrape costs."""
    import timeit

    from telemetry import metrics, tracing

    def best(work: object) -> float:
        runs = timeit.repeat(work, number=20_000, repeat=5)  # type: ignore[arg-type]
        return min(runs) / 20_000 * 1e6

    return [
        ("a request (count + histogram)", best(
            lambda: metrics.request_answered("/api/v1/select", "POST", 200, 0.02)
        )),
        ("a selection (counters + histogram)", best(
            lambda: metrics.selection_answered(
                "cat-0", "hybrid", "api", cached=False, no_tool=False,
                degraded=False, seconds=0.02,
            )
        )),
        ("a call's outcome + upstream time", best(lambda: (
            metrics.tool_call_recorded("cat-0/src", "ran"),
            metrics.upstream_answered("cat-0/src", "ran", 0.05),
        ))),
        ("a span with tracing off", best(lambda: tracing.span("quiver.select"))),
    ]  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--approvals", type=int, default=10_000)
    parser.add_argument("--sources", type=int, default=200)
    parser.add_argument("--backlog", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--scrapes", type=int, default=40)
    parser.add_argument(
        "--explain", action="store_true", help="print the plans to stderr"
    )
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="quiver-bench-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    state = ROOT / ".quiver" / "bench-metrics"
    use_bench_database(DATABASE, state)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    try:
        call_command("migrate", verbosity=0)
        fill(args)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        processes(args.processes)
        rows = [("quiet audit (0 unsealed)", measure(args.scrapes))]
        backlog(args.backlog)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE audit_auditevent")
        rows.append((f"{args.backlog:,} unsealed", measure(args.scrapes)))
        if args.explain:
            explain()
    finally:
        connection.close()
        drop(DATABASE)
    print(report(args, rows))
    print("\n| counting on the request path | us |\n|---|---|")
    print("\n".join(f"| {name} | {us:.1f} |" for name, us in per_request()))
    return 0


def explain() -> None:
    from django.db import connection

    from telemetry.collector import sources_read, state_parameters, state_sql

    statements = ((state_sql(), state_parameters()), (sources_read().sql, None))
    with connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            say("\n".join(row[0] for row in cursor.fetchall()))


def drop(name: str) -> None:
    import psycopg
    from _loadstack import with_database

    admin = with_database(os.environ["DATABASE_URL"], "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def report(args: argparse.Namespace, rows: list[tuple[str, dict[str, float]]]) -> str:
    head = (
        f"{args.tools:,} tools, {args.jobs:,} jobs, {args.approvals:,} approvals, "
        f"{args.sources} sources, {args.processes} processes, "
        f"{args.scrapes} scrapes per row\n\n"
        "| audit | scrape p50 ms | scrape max ms | database p50 ms "
        "| database max ms | bytes |\n|---|---|---|---|---|---|"
    )
    lines = [
        f"| {name} | {m['p50']:.1f} | {m['max']:.1f} | {m['db p50']:.1f} "
        f"| {m['db max']:.1f} | {m['bytes']:,.0f} |"
        for name, m in rows
    ]
    return "\n".join([head, *lines])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
