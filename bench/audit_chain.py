"""Audit chain: time writers wait on the chain (before/after sealing) and verify rate.

Run: ``.venv/bin/python -m config.devstack test -- .venv/bin/python
bench/audit_chain.py`` (embedded Postgres; the script works in its own database,
``quiver_bench_audit``, created and migrated on first use, and emptied per phase).

Options: ``--writers 8``, ``--events 300`` (per writer), ``--work-ms 2`` (time each
writer's transaction spends after its audit write before COMMIT, standing in for the
rest of a request's transaction), ``--verify-events 200000``, ``--skip-writers``,
``--skip-verify``.

Writers: ``--writers`` threads, each with its own connection, append ``--events``
events, each in its own transaction. "before" is the old ``record_event`` (take the
chain's advisory lock, read the head's hash, hash, INSERT, all in the caller's
transaction, so the lock is held until COMMIT); "after" is today's ``record_event``
(one INSERT, no lock) with the sealer thread running at its configured interval.
Per event: the time spent waiting for the chain lock, the whole audit write
(lock + head read + INSERT), and, after, the delay until the row was sealed.

Verify: ``--verify-events`` selection-like events (about 0.8 kB of JSON each) are
inserted by SQL, sealed (sealing rate), then ``verify_chain`` checks them all
(events/s). "before" is the old check (ORM iterator, chunks of 2,000, a
SHA-256 over canonical JSON of each model object) timed over the first 20,000 rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench._benchdb import use_bench_database  # noqa: E402

BENCH_DB = "quiver_bench_audit"
STATE = ROOT / ".quiver" / "bench-audit"


def _use_bench_database() -> None:
    use_bench_database(BENCH_DB, STATE)
    os.environ.setdefault("DEBUG", "true")


_use_bench_database()
import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, connections, transaction  # noqa: E402

from audit.models import AuditEvent  # noqa: E402
from audit.sealing import seal_pending, start_sealer_thread  # noqa: E402
from audit.services import record_event, verify_chain  # noqa: E402

OLD_LOCK = 7_310_001


def reset() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET quiver.audit_truncate = 'on'")
        cursor.execute("TRUNCATE audit_auditevent RESTART IDENTITY")
        cursor.execute("RESET quiver.audit_truncate")
    Path(settings.QUIVER_AUDIT_CHECKPOINT_FILE).unlink(missing_ok=True)


def _payload(n: int) -> tuple[dict, dict]:
    query = f"what is the weather in city number {n}"
    tools = [
        {"name": f"tool_{k}", "score": 0.5 + k / 10, "reason": "matched the query"}
        for k in range(3)
    ]
    return {"request": {"query": query, "max_candidates": 3}}, {"tools": tools}


def old_record(n: int) -> float:
    """The old record_event: returns the seconds spent waiting for the chain lock."""
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [OLD_LOCK])
    waited = time.perf_counter() - started
    last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
    inp, out = _payload(n)
    prev = last or "0" * 64
    digest = hashlib.sha256(json.dumps([prev, inp, out, n]).encode()).hexdigest()
    AuditEvent(
        event_type="selection", actor_name="bench", request_id=uuid.uuid4(),
        summary=f"bench {n}", input=inp, output=out, prev_hash=prev, hash=digest,
        hash_version=1, created=django.utils.timezone.now(),
    ).save()  # fmt: skip
    return waited


def new_record(n: int) -> float:
    inp, out = _payload(n)
    record_event(
        "selection", actor=None, request_id=None, summary=f"bench {n}",
        input=inp, output=out,
    )  # fmt: skip
    return 0.0


def _writer(
    write: Callable[[int], float], base: int, events: int, work_s: float,
    waits: list[float], writes: list[float],
) -> None:  # fmt: skip
    for i in range(events):
        with transaction.atomic():
            started = time.perf_counter()
            waits.append(write(base + i))
            writes.append(time.perf_counter() - started)
            time.sleep(work_s)
    connections.close_all()


def run_writers(mode: str, writers: int, events: int, work_ms: float) -> dict:
    reset()
    write = old_record if mode == "before" else new_record
    waits: list[float] = []
    writes: list[float] = []
    sealer = (
        start_sealer_thread(settings.QUIVER_AUDIT_SEAL_INTERVAL_S)
        if (mode == "after")
        else None
    )
    threads = [
        threading.Thread(
            target=_writer,
            args=(write, n * events, events, work_ms / 1000, waits, writes),
        )
        for n in range(writers)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    result = {"mode": mode, "events": len(writes), "wall": wall,
              "waits": waits, "writes": writes}  # fmt: skip
    if sealer is not None:
        seal_pending()
        sealer.stop()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT extract(epoch FROM sealed_at - created) FROM audit_auditevent"
            )
            result["seal_delays"] = [float(r[0]) for r in cursor.fetchall()]
    return result


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def print_writers(results: list[dict], writers: int, work_ms: float) -> None:
    print(
        f"\nAudit writes: {writers} concurrent writers, each event in its own "
        f"transaction with {work_ms:g} ms of other work after the audit write"
    )
    head = (
        f"{'':8}{'events':>8}{'events/s':>10}{'lock p50':>10}{'lock p95':>10}"
        f"{'write p50':>11}{'write p95':>11}{'seal p50':>10}{'seal p95':>10}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        ms = [v * 1000 for v in r["waits"]]
        wr = [v * 1000 for v in r["writes"]]
        seal = r.get("seal_delays", [])
        seal_cols = (
            f"{pct(seal, 0.5):>9.2f}s{pct(seal, 0.95):>9.2f}s"
            if seal
            else f"{'-':>10}{'-':>10}"
        )
        print(
            f"{r['mode']:8}{r['events']:>8}{r['events'] / r['wall']:>10.0f}"
            f"{pct(ms, 0.5):>8.2f}ms{pct(ms, 0.95):>8.2f}ms"
            f"{pct(wr, 0.5):>9.2f}ms{pct(wr, 0.95):>9.2f}ms{seal_cols}"
        )


GENERATE = """
INSERT INTO audit_auditevent (event_type, actor_name, request_id, catalog_slug,
    catalog_version, summary, input, output, created, prev_hash, hash_version, key_id)
SELECT 'selection', 'bench-agent', gen_random_uuid(), 'default', 7,
    'weather in city ' || g || ' -> get_weather',
    jsonb_build_object('format', 'canonical', 'request', jsonb_build_object(
        'query', 'what is the weather in city ' || g, 'max_candidates', 3,
        'min_score', 0.05, 'scorer', 'hybrid', 'tags', jsonb_build_array('weather'))),
    jsonb_build_object('tools', (SELECT jsonb_agg(jsonb_build_object(
            'name', 'tool_' || k, 'score', round(random()::numeric, 6),
            'reason', 'matched: weather, city', 'version', md5(k::text),
            'signals', jsonb_build_object('bm25f', round(random()::numeric, 4),
                                          'embedding', round(random()::numeric, 4))))
        FROM generate_series(1, 3) k),
        'excluded', jsonb_build_object('policy', 2, 'below_min_score', 40,
                                       'cut_by_rank', 134),
        'stats', jsonb_build_object('considered', 179, 'latency_ms', random() * 20)),
    now() - interval '1 hour' + g * interval '1 millisecond', '', 2, ''
FROM generate_series(%s, %s) g
"""


def generate(count: int) -> float:
    reset()
    started = time.perf_counter()
    step = 50_000
    for first in range(1, count + 1, step):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(GENERATE, [first, min(count, first + step - 1)])
    return time.perf_counter() - started


def old_verify_rate(limit: int = 20_000) -> float:
    """The old verify_chain's per-row work: ORM objects, canonical JSON, SHA-256."""

    def canonical(value: object) -> str:
        from django.core.serializers.json import DjangoJSONEncoder

        return json.dumps(value, sort_keys=True, separators=(",", ":"),
                          cls=DjangoJSONEncoder)  # fmt: skip

    started = time.perf_counter()
    rows = AuditEvent.objects.order_by("id")[:limit].iterator(chunk_size=2000)
    count = 0
    for event in rows:
        count += 1
        body = {
            "event_type": event.event_type, "actor_name": event.actor_name,
            "request_id": str(event.request_id), "catalog_slug": event.catalog_slug,
            "catalog_version": event.catalog_version, "summary": event.summary,
            "input": json.loads(canonical(event.input)),
            "output": json.loads(canonical(event.output)),
            "created": event.created.isoformat(), "prev_hash": event.prev_hash,
        }  # fmt: skip
        hashlib.sha256(canonical(body).encode()).hexdigest()
    return count / (time.perf_counter() - started)


def backend_cpu() -> float:
    """CPU seconds this connection's Postgres backend has used (local server)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_verify(workers: int = 1) -> tuple[object, float, float]:
    """verify_chain, with the CPU seconds of this process and of its backend (one
    worker only: with more, the other backends are not counted)."""
    if workers > 1:
        return verify_chain(seal=False, workers=workers), 0.0, 0.0
    cpu, db_cpu = time.process_time(), backend_cpu()
    check = verify_chain(seal=False)
    return check, time.process_time() - cpu, backend_cpu() - db_cpu


def run_verify(count: int) -> None:
    made = generate(count)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_total_relation_size('audit_auditevent'))"
        )
        size = cursor.fetchone()[0]
    started = time.perf_counter()
    sealed = seal_pending(batch=10_000)
    seal_s = time.perf_counter() - started
    before = old_verify_rate()
    runs = [timed_verify() for _ in range(3)]
    parallel = [timed_verify(workers=2) for _ in range(2)]
    best = max((run[0] for run in runs + parallel), key=lambda c: c.per_second)
    print_verify(count, size, made, (sealed, seal_s), before, runs, parallel)
    assert best.ok, best.problem


def print_verify(
    count: int, size: str, made: float, seal: tuple[int, float], before: float,
    runs: list, parallel: list,
) -> None:  # fmt: skip
    sealed, seal_s = seal
    print(
        f"\nVerify: {count} generated events (table {size}, generated in {made:.1f}s)"
    )
    head = (
        f"{'':34}{'records':>10}{'seconds':>10}{'records/s':>12}"
        f"{'py cpu s':>10}{'pg cpu s':>10}{'records/cpu-s':>15}"
    )
    print(head)
    print("-" * len(head))
    print(
        f"{'seal (sealer, batches of 10,000)':34}{sealed:>10}{seal_s:>10.2f}"
        f"{sealed / seal_s:>12.0f}"
    )
    print(
        f"{'verify before (ORM + sha256)':34}{20_000:>10}{20_000 / before:>10.2f}"
        f"{before:>12.0f}"
    )
    for n, (run, cpu, db_cpu) in enumerate(runs, start=1):
        print(
            f"{f'verify after (run {n})':34}{run.checked:>10}{run.seconds:>10.2f}"
            f"{run.per_second:>12}{cpu:>10.2f}{db_cpu:>10.2f}"
            f"{run.checked / (cpu + db_cpu):>15.0f}"
        )
    for n, (run, _, _) in enumerate(parallel, start=1):
        print(
            f"{f'verify after, 2 threads (run {n})':34}{run.checked:>10}"
            f"{run.seconds:>10.2f}{run.per_second:>12}{'-':>10}{'-':>10}{'-':>15}"
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--work-ms", type=float, default=2.0)
    parser.add_argument("--verify-events", type=int, default=200_000)
    parser.add_argument("--skip-writers", action="store_true")
    parser.add_argument("--skip-verify", action="store_true")
    args = parser.parse_args(argv)
    call_command("migrate", "--noinput", verbosity=0)
    if not args.skip_writers:
        results = [
            run_writers(mode, args.writers, args.events, args.work_ms)
            for mode in ("before", "after")
        ]
        print_writers(results, args.writers, args.work_ms)
    if not args.skip_verify:
        run_verify(args.verify_events)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
