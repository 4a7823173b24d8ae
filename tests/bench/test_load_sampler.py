"""The load bench's measuring parts (bench/_loadgen.py): the queries it sends are
distinct, and its Postgres sampler counts the web backends waiting for and holding
an advisory lock, and nobody else's."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
from django.db import connection

from bench._loadgen import InFlight, LockSampler, distinct_queries

LOCK = 7_310_001  # any advisory key: the sampler does not depend on the app's


def _dsn() -> str:
    params = connection.get_connection_params()
    keys = ("dbname", "user", "password", "host", "port")
    return psycopg.conninfo.make_conninfo(
        **{k: params[k] for k in keys if params.get(k)}
    )


def _wait_for_lock(dsn: str, app: str, ready: threading.Event) -> None:
    with psycopg.connect(dsn, application_name=app) as conn:
        ready.set()
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
        conn.commit()


def test_queries_stay_distinct_past_one_cycle() -> None:
    assert distinct_queries(["a b", "c"], 5) == ["a b", "c", "a b #1", "c #1", "a b #2"]


def test_warm_up_queries_never_match_measured_ones() -> None:
    measured = set(distinct_queries(["a", "b"], 10))
    warm = distinct_queries(["a", "b"], 10, tag="warm-up")
    assert len(set(warm)) == 10
    assert not measured & set(warm)


@pytest.mark.django_db
def test_the_sampler_counts_web_backends_waiting_for_an_advisory_lock() -> None:
    dsn, web = _dsn(), "bench-load-web-test"
    holder = psycopg.connect(dsn, application_name=web)
    holder.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
    threads = []
    for app in (web, "someone-else"):
        ready = threading.Event()
        thread = threading.Thread(target=_wait_for_lock, args=(dsn, app, ready))
        thread.start()
        ready.wait(10)
        threads.append(thread)
    time.sleep(0.3)  # both are queued behind the holder now
    inflight = InFlight()
    inflight.now = 3
    try:
        with LockSampler(dsn, web, inflight, interval_s=0.02) as sampler:
            time.sleep(0.6)
    finally:
        holder.commit()
        holder.close()
        for thread in threads:
            thread.join(10)
    stats: Any = sampler.stats()
    assert stats.samples >= 10
    assert stats.waiting == 1.0  # the other application's waiter is not counted
    assert stats.max_waiting == 1
    assert stats.holding == 1.0
    assert stats.holding_app == 1.0  # the holder sits idle in its transaction
    assert stats.holding_wal == 0.0
    assert stats.any_waiting == 1.0
    assert stats.waiting_share == pytest.approx(1 / 3)
    assert stats.wait_ms_per_request(wall_s=2.0, requests=4) == pytest.approx(500.0)
