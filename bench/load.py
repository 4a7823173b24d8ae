"""Load: concurrent POST /api/v1/select against gunicorn with 1, 2 and 4 workers.

Run (``make bench-load``)::

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/load.py \\
        --duration 300 --workers 1,2,4

``config.devstack test`` provides DATABASE_URL (embedded Postgres + pgvector) and
CELERY_BROKER_URL (a Redis). The script works in its own database on that server
(``--database``, default ``quiver_bench_load``): created and migrated at the start,
dropped at the end; with ``--keep`` it is left in place and reused by the next run
with ``--keep`` (the catalog is then not rebuilt).

1. The catalog (``--catalog sealtools``: Seal-Tools' 4,076 tools, or ``metatool``:
   MetaTool's 199) is written and embedded the way ``bench/speed.py`` does it (its
   ``build_catalog``: bulk rows, binary COPY of the vectors, HNSW index; document
   vectors cached under ``.quiver/bench-cache/``). One ``agent`` key for it, with a
   rate limit far above what the run can send.
2. For each worker count N: gunicorn as ``make run`` starts it
   (``-c python:config.gunicorn``: threaded workers, ``--threads`` each or the
   config's, metrics written to a directory of their own) with ``-w N``, on a free
   loopback port, DEBUG false, with this environment; Postgres sees its
   connections as application_name ``bench-load-web-<port>``.
3. ``--warmup`` seconds of the same load with warm-up queries (every worker loads
   the model and builds its snapshot), not measured.
4. ``--duration`` seconds (at most ``--max-requests`` requests) of load:
   ``--clients`` asyncio clients (one httpx.AsyncClient, keep-alive where gunicorn
   allows it) each sending its next request as soon as its answer is back. Every
   request carries a distinct query (``explain`` off): the data set's dev queries
   (deduplicated, shuffled with a fixed seed), and once they are used up the same
   texts with a counter word ``#k`` appended (k-th cycle), so nothing is answered
   from a cache. Each worker count starts over with the same sequence (its
   gunicorn is new, so nothing of the previous run is cached); warm-up queries
   carry the word ``warm-up`` and never match a measured one.
5. Meanwhile a side connection samples Postgres every ~20 ms (``pg_locks`` joined
   to ``pg_stat_activity`` on the web's application_name): web backends waiting
   for an advisory lock (not granted), holding one (and what the holder is doing:
   idle in its transaction, running SQL, flushing WAL), and active or inside a
   transaction, next to the requests in flight at the clients. The only advisory
   lock in the app is the audit chain's ``pg_advisory_xact_lock`` in
   ``audit.services.record_event``; if a later design drops it, the wait reads 0.

6. With ``--peer-python`` (a Python with the ``bench`` extra, e.g.
   ``.venv-bench/bin/python``): the in-process MiniLM peer (``bench/_selectpeer.py``,
   sentence-transformers on one torch thread, one process per core) answers the same
   distinct queries for ``--duration`` seconds after the HTTP runs; and, unless
   ``--engine-requests 0``, this process times the engine with its query encoding
   (``semantic_for`` + ``select``: what /select computes besides the framework) on
   one thread over that many of the same queries, in CPU time. ``--static`` builds
   the static query encoder first (as ``make run``'s worker does; kept under
   ``.quiver/bench-cache/`` and removed from the state directory at the end).

Tables (stdout): per worker count, requests, errors (non-2xx and exceptions, by
kind), throughput, client-measured p50/p95/p99/mean, the answers' own
``stats.latency_ms`` p50 (the server's selection time, excluding queueing, auth and
the audit write), the web workers' CPU time per request; then the audit lock: mean
waiters, their share of the requests in flight, the share of samples with a
waiter, the estimated wait per request (Little's law: mean waiters x wall time /
requests), the share of time the lock is held and the hold time per request.
Progress goes to stderr; gunicorn's logs to ``.quiver/bench-load-logs/``.

Everything it starts (gunicorn, in its own session, also told by the kernel to
stop if this process dies) is stopped on exit, Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import random
import re
import shutil
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from bench._loadgen import (  # noqa: E402
    InFlight,
    LoadResult,
    LockSampler,
    LockStats,
    distinct_queries,
    is_2xx,
    run_load,
)
from bench._loadpeer import (  # noqa: E402
    fmt,
    install_static_encoder,
    peer_and_engine,
    peer_table,
    table,
)
from bench._loadstack import (  # noqa: E402
    Gunicorn,
    Janitor,
    backend_cpu_s,
    create_database,
    database_exists,
    drop_database,
    gunicorn,
    redis_cpu_s,
    web_backends,
    with_database,
)

CATALOG_SIZES = {"sealtools": 4076, "metatool": 200}  # bench/speed.py's size keys
CLIENT_PREFIX = "bench-load-agent"
SELECT_PATH = "/api/v1/select"
SEED = 20240601
STARTED = time.monotonic()


def say(message: str) -> None:
    """A progress line on stderr (the tables go to stdout)."""
    elapsed = time.monotonic() - STARTED
    print(f"[load {elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)


# --- one run --------------------------------------------------------------------------


class Run:
    """One worker count's measured load and what was sampled meanwhile."""

    def __init__(
        self,
        workers: int,
        result: LoadResult,
        lock: LockStats,
        cpu_s: tuple[float, float, float],
    ) -> None:
        self.workers, self.result, self.lock = workers, result, lock
        per = 1000 / result.requests if result.requests else 0.0
        self.web_cpu_ms, self.db_cpu_ms, self.redis_cpu_ms = (c * per for c in cpu_s)
        self.load = os.getloadavg()[0]


def warm_up(web: Gunicorn, ctx: dict[str, Any]) -> None:
    """``--warmup`` seconds of load, then 5 s more at a time (up to 2 minutes)
    until every worker holds a database connection, i.e. has answered a request
    (the first one loads the model and builds the snapshot)."""
    args, queries = ctx["args"], ctx["warmup_queries"]
    seconds, sent, errors = args.warmup, 0, Counter[str]()
    deadline = time.monotonic() + args.warmup + 120
    while seconds > 0:
        warm = run_load(
            web.url + SELECT_PATH, ctx["headers"], ctx["body"], queries[sent:],
            args.clients, seconds,
        )  # fmt: skip
        sent += warm.requests
        errors.update({k: n for k, n in warm.outcomes.items() if not is_2xx(k)})
        ready = web_backends(ctx["dsn"], web.app_name)
        if ready >= web.workers or time.monotonic() > deadline:
            break
        say(f"warm-up: {ready} of {web.workers} workers have answered; 5 s more")
        seconds = 5
    say(f"warm-up: {sent} requests, errors: {dict(errors) or 'none'}")


def measure(workers: int, ctx: dict[str, Any]) -> Run:
    args = ctx["args"]
    with gunicorn(workers, ctx["log_dir"], args.threads) as web:
        say(f"{workers} worker(s): gunicorn on {web.url}; warm-up {args.warmup:g}s")
        warm_up(web, ctx)
        say(f"{workers} worker(s): measuring {args.duration:g}s")
        inflight = InFlight()
        broker = os.environ["CELERY_BROKER_URL"]
        before = (web.workers_cpu_s(), backend_cpu_s(ctx["dsn"], web.app_name))
        redis_before = redis_cpu_s(broker)
        with LockSampler(ctx["dsn"], web.app_name, inflight) as sampler:
            result = run_load(
                web.url + SELECT_PATH, ctx["headers"], ctx["body"], ctx["queries"],
                args.clients, args.duration, inflight,
            )  # fmt: skip
        db = backend_cpu_s(ctx["dsn"], web.app_name)
        cpu_s = (
            web.workers_cpu_s() - before[0],
            sum(cpu - before[1].get(pid, 0.0) for pid, cpu in db.items()),
            redis_cpu_s(broker) - redis_before,
        )
    run = Run(workers, result, sampler.stats(), cpu_s)
    say(
        f"{workers} worker(s): {result.requests} requests, {result.errors} errors, "
        f"{result.requests / result.wall_s:.1f} req/s, p50 {result.pct(50) or 0:.0f} ms"
        + (f"; first error: {result.first_error}" if result.first_error else "")
    )
    return run


# --- report ---------------------------------------------------------------------------


def outcomes(result: LoadResult) -> str:
    bad = sorted((k, n) for k, n in result.outcomes.items() if not is_2xx(k))
    return ", ".join(f"{k}: {n}" for k, n in bad) or "—"


def latency_table(runs: list[Run], clients: int) -> str:
    rows = []
    for r in runs:
        res = r.result
        server_p50 = (
            sorted(res.server_ms)[len(res.server_ms) // 2] if res.server_ms else None
        )
        rows.append([
            str(r.workers), str(clients), f"{res.requests:,}", str(res.errors),
            outcomes(res), fmt(res.requests / res.wall_s if res.wall_s else None),
            fmt(res.pct(50)), fmt(res.pct(95)), fmt(res.pct(99)),
            fmt(sum(res.ms) / len(res.ms) if res.ms else None), fmt(server_p50),
            fmt(r.web_cpu_ms), fmt(r.load),
        ])  # fmt: skip
    return table(
        ["workers", "clients", "requests", "errors", "errors by kind", "req/s",
         "p50 ms", "p95 ms", "p99 ms", "mean ms", "server latency_ms p50",
         "web CPU ms/req", "load avg"],
        rows,
    )  # fmt: skip


def held_ms(lock: LockStats, rate: float) -> str:
    """Time the lock is held per request, split by what its holder was doing."""
    if not rate:
        return "—"
    sql = max(0.0, lock.holding - lock.holding_app - lock.holding_wal)
    parts = (lock.holding_app, sql, lock.holding_wal)
    split = " / ".join(f"{share * 1000 / rate:.2f}" for share in parts)
    return f"{lock.holding * 1000 / rate:.2f} ({split})"


def lock_table(runs: list[Run]) -> str:
    rows = []
    for r in runs:
        lock, res = r.lock, r.result
        wait = lock.wait_ms_per_request(res.wall_s, res.requests)
        rate = res.requests / res.wall_s if res.wall_s else 0.0
        mean = sum(res.ms) / len(res.ms) if res.ms else 0.0
        rows.append([
            str(r.workers), f"{lock.samples:,} every {lock.interval_ms:.0f} ms",
            fmt(lock.inflight, 2), fmt(lock.busy, 2),
            f"{lock.waiting:.3f} (max {lock.max_waiting})",
            f"{100 * lock.waiting_share:.1f}%", f"{100 * lock.any_waiting:.1f}%",
            fmt(wait, 2), f"{100 * wait / mean:.1f}%" if mean else "—",
            f"{100 * lock.holding:.1f}%",
            held_ms(lock, rate),
            fmt(rate / lock.holding if lock.holding else None, 0),
        ])  # fmt: skip
    return table(
        ["workers", "samples", "in flight (clients)", "web backends busy",
         "waiting for the lock: mean (max)", "share of in-flight waiting",
         "samples with a waiter", "wait ms/request (est.)", "share of mean latency",
         "lock held (share of time)", "held ms/request: all (app / SQL / WAL flush)",
         "req/s ceiling set by the lock"],
        rows,
    )  # fmt: skip


def report(runs: list[Run], ctx: dict[str, Any]) -> str:
    args = ctx["args"]
    now = dt.datetime.now().isoformat(timespec="minutes")
    cycles = ctx["cycled"]
    return "\n".join([
        f"Load, {now}: {os.cpu_count()} CPUs, load average {ctx['load_start']:.1f} "
        f"at the start and {os.getloadavg()[0]:.1f} at the end; catalog "
        f"{args.catalog} ({ctx['tools']:,} tools), model {ctx['model']}; "
        f"{args.clients} clients, {args.duration:g}s per worker count after "
        f"{args.warmup:g}s of warm-up; gunicorn as make run starts it (threaded "
        f"workers, {args.threads or 'the default'} threads each), DEBUG false.",
        f"Queries: {ctx['pool']:,} distinct dev queries of {args.catalog}; "
        + (f"up to {cycles} more cycle(s) of them with a counter word appended."
           if cycles else "no run used them all (no counter words)."),
        "\n### POST /api/v1/select (client-measured)\n",
        latency_table(runs, args.clients),
        "\n### Waiting for the audit chain's advisory lock (Postgres sampled)\n",
        lock_table(runs),
    ])  # fmt: skip


# --- setup ----------------------------------------------------------------------------


def dev_queries(dataset: str) -> list[str]:
    """The data set's dev queries, distinct after the query cache's normalisation,
    shuffled with a fixed seed (short and long queries mixed in every slice)."""
    from bench._data import DATA_DIR, read_jsonl
    from selection.adapters.pgvector import normalise_query

    seen: set[str] = set()
    pool = []
    for row in read_jsonl(DATA_DIR / dataset / "queries_dev.jsonl"):
        key = normalise_query(row["query"])
        if key and key not in seen:
            seen.add(key)
            pool.append(row["query"])
    random.Random(SEED).shuffle(pool)
    return pool


def prepare_catalog(args: argparse.Namespace) -> tuple[str, int, str, str]:
    """Migrate, build (or, with --keep, reuse) the catalog, make a key.

    Returns the catalog slug, its tool count, the model id and the bearer key."""
    from django.core.management import call_command

    import bench.speed as speed  # sets Django up with this process's environment
    from catalog.models import Catalog, Tool
    from identity.services.clients import create_api_client

    say("migrating ...")
    call_command("migrate", verbosity=0, interactive=False)
    backend = speed.current_backend()
    size = CATALOG_SIZES[args.catalog]
    slug = f"{speed.PREFIX}-{size}"
    catalog = Catalog.objects.filter(slug=slug).first()
    if catalog is None or catalog.active_embedding_model != backend.model_id:
        speed.clean_up()
        say(f"building the {args.catalog} catalog ...")
        catalog = speed.build_catalog(size, use_cache=True).catalog
    else:
        say(f"reusing the {slug} catalog of an earlier --keep run")
    name = f"{CLIENT_PREFIX}-{int(time.time())}"
    # A limit far above the run's rate: the bench measures the service, not a limiter.
    _, key = create_api_client(
        name, "agent", catalogs=[slug], rate_limit_per_minute=10_000_000
    )
    tools = Tool.objects.filter(catalog=catalog).count()
    return slug, tools, backend.model_id, key


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--catalog", choices=sorted(CATALOG_SIZES), default="sealtools")
    parser.add_argument("--workers", default="1,2,4", help="gunicorn worker counts")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--threads", type=int, default=0, help="threads per worker (make run's)"
    )
    parser.add_argument("--duration", type=float, default=300.0, help="seconds")
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds")
    parser.add_argument("--database", default="quiver_bench_load")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--static", action="store_true", help="static encoder on")
    parser.add_argument("--peer-python", default="", help="a Python with [bench]")
    parser.add_argument("--peer-processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--engine-requests", type=int, default=300)
    parser.add_argument(
        "--repeat",
        type=int,
        default=0,
        help="send only this many queries, over and over (answers cached)",
    )
    args = parser.parse_args(argv)
    try:
        args.workers = [int(w) for w in args.workers.split(",") if w.strip()]
    except ValueError:
        parser.error("--workers: a comma-separated list of integers")
    if not args.workers or min(args.workers) < 1 or max(args.workers) > 16:
        parser.error("--workers: each count must be 1 to 16")
    if not 1 <= args.clients <= 256:
        parser.error("--clients: must be 1 to 256")
    if args.duration <= 0 or args.warmup < 0 or args.max_requests < 1:
        parser.error("--duration and --max-requests must be positive")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", args.database):
        parser.error("--database: lower-case letters, digits and underscores")
    return args


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def fresh_log_dir() -> Path:
    """gunicorn's logs go to the state directory, replaced by each run."""
    path = ROOT / ".quiver" / "bench-load-logs"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def run(args: argparse.Namespace, dsn: str) -> str:
    slug, tools, model, key = prepare_catalog(args)
    pool = dev_queries(args.catalog)
    other = dev_queries("metatool" if args.catalog == "sealtools" else "sealtools")
    warm_count = max(1, int(args.warmup * 200))  # far more than a warm-up can send
    ctx: dict[str, Any] = {
        "args": args,
        "dsn": dsn,
        "headers": {"Authorization": f"Bearer {key}"},
        "body": lambda query: {"catalog": slug, "query": query, "explain": False},
        "queries": distinct_queries(pool, args.max_requests),
        "warmup_queries": distinct_queries(other, warm_count, tag="warm-up"),
        "log_dir": fresh_log_dir(),
        "load_start": os.getloadavg()[0],
        "tools": tools,
        "model": model,
        "pool": len(pool),
        "slug": slug,
    }
    if args.repeat:  # every answer from the cache: the framework's own cost
        ctx["queries"] = (pool[: args.repeat] * args.max_requests)[: args.max_requests]
        ctx["warmup_queries"] = ctx["queries"]
    static = install_static_encoder(args.catalog) if args.static else None
    try:
        runs = [measure(workers, ctx) for workers in args.workers]
        ctx["cycled"] = max((r.result.requests - 1) // len(pool) for r in runs)
        say(f"gunicorn logs are in {ctx['log_dir']} (replaced by the next run)")
        peer, engine = peer_and_engine(args, ctx)
    finally:
        if static is not None:  # the tests share this state directory
            static.unlink(missing_ok=True)
    return report(runs, ctx) + peer_table(runs, peer, engine, args)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url:
        raise SystemExit(
            "DATABASE_URL is not set: run through `python -m config.devstack test -- "
            ".venv/bin/python bench/load.py ...` (or `make bench-load`)"
        )
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    dsn = with_database(admin_url, args.database)
    if args.keep and database_exists(admin_url, args.database):
        say(f"--keep: reusing the database {args.database}")
    else:
        say(f"creating the database {args.database}")
        create_database(admin_url, args.database)
    janitor = None if args.keep else Janitor(admin_url, args.database)
    os.environ["DATABASE_URL"] = dsn
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        text = run(args, dsn)
    finally:
        from django.db import connections

        connections.close_all()
        if janitor is None:
            say(f"--keep: leaving the database {args.database}")
        else:
            say(f"dropping the database {args.database}")
            drop_database(admin_url, args.database)
            janitor.done()
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
