"""The load generator and the audit-lock sampler of ``bench/load.py`` (no Django).

* ``distinct_queries``: the data set's dev queries, made distinct past one cycle by a
  counter word.
* ``run_load``: C asyncio clients (one httpx.AsyncClient) sending POST requests as
  fast as answers come back, bounded by a duration and a request count; every
  request's client-measured latency, status (or exception name) and the answer's
  ``stats.latency_ms``.
* ``LockSampler``: a thread with its own Postgres connection that, every ~20 ms,
  counts the web backends (by application_name) waiting for an advisory lock
  (``pg_locks`` not granted; the audit chain's ``pg_advisory_xact_lock``), those
  holding one, and those active, next to the client's in-flight requests.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import psycopg


def distinct_queries(pool: Sequence[str], count: int, tag: str = "") -> list[str]:
    """``count`` distinct queries cycling through ``pool`` (distinct texts).

    The first cycle is the pool as is; cycle k >= 1 appends the word ``#k`` (with
    ``tag`` before it, e.g. "warm-up"), so no text repeats within a run."""
    out = []
    for i in range(count):
        cycle, j = divmod(i, len(pool))
        words = " ".join(w for w in (tag, f"#{cycle}" if cycle else "") if w)
        out.append(f"{pool[j]} {words}" if words else pool[j])
    return out


def is_2xx(outcome: str) -> bool:
    """An outcome is an HTTP status ("200") or an exception's name."""
    return outcome.isdigit() and outcome.startswith("2")


@dataclass
class LoadResult:
    """What the clients saw: one entry per finished request, in finishing order."""

    ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0
    first_error: str = ""

    @property
    def requests(self) -> int:
        return sum(self.outcomes.values())

    @property
    def errors(self) -> int:
        return sum(n for k, n in self.outcomes.items() if not is_2xx(k))

    def pct(self, q: float) -> float | None:
        return float(np.percentile(self.ms, q)) if self.ms else None


class InFlight:
    """Requests sent and not yet answered (read by the sampler thread)."""

    def __init__(self) -> None:
        self.now = 0


async def _client(
    http: httpx.AsyncClient,
    url: str,
    make_body: Callable[[str], dict[str, Any]],
    queries: list[str],
    state: dict[str, Any],
) -> None:
    result: LoadResult = state["result"]
    inflight: InFlight = state["inflight"]
    while time.perf_counter() < state["deadline"] and state["next"] < len(queries):
        query = queries[state["next"]]
        state["next"] += 1
        inflight.now += 1
        started = time.perf_counter()
        try:
            response = await http.post(url, json=make_body(query))
            outcome = str(response.status_code)
            if response.is_success:
                stats = response.json().get("stats") or {}
                result.server_ms.append(float(stats.get("latency_ms", 0.0)))
            elif not result.first_error:
                result.first_error = f"HTTP {outcome}: {response.text[:300]}"
        except (httpx.HTTPError, ValueError) as exc:
            outcome = type(exc).__name__
            if not result.first_error:
                result.first_error = f"{outcome}: {exc}"
        finally:
            inflight.now -= 1
        result.ms.append((time.perf_counter() - started) * 1000)
        result.outcomes[outcome] += 1


async def _run(
    url: str,
    headers: dict[str, str],
    make_body: Callable[[str], dict[str, Any]],
    queries: list[str],
    clients: int,
    duration_s: float,
    inflight: InFlight,
) -> LoadResult:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    timeout = httpx.Timeout(120.0, connect=10.0)
    result = LoadResult()
    started = time.perf_counter()
    state = {
        "result": result,
        "inflight": inflight,
        "next": 0,
        "deadline": started + duration_s,
    }
    async with httpx.AsyncClient(
        headers=headers, limits=limits, timeout=timeout
    ) as http:
        await asyncio.gather(
            *(_client(http, url, make_body, queries, state) for _ in range(clients))
        )
    result.wall_s = time.perf_counter() - started
    return result


def run_load(
    url: str,
    headers: dict[str, str],
    make_body: Callable[[str], dict[str, Any]],
    queries: list[str],
    clients: int,
    duration_s: float,
    inflight: InFlight | None = None,
) -> LoadResult:
    """Send ``queries`` in order from ``clients`` concurrent clients until the time
    or the queries run out; a request still open at the deadline is awaited."""
    coroutine = _run(
        url, headers, make_body, queries, clients, duration_s, inflight or InFlight()
    )
    return asyncio.run(coroutine)


# --- the audit-lock sampler -----------------------------------------------------------

# Per sample, over the web backends (the app names its connections through
# PGAPPNAME): those waiting for an advisory lock, those holding one, the holders
# idle in their transaction (the app's Python between two statements) and those
# flushing WAL (the COMMIT), and the backends active or inside a transaction.
SAMPLE_SQL = """
WITH web AS (
  SELECT pid, state, wait_event FROM pg_stat_activity WHERE application_name = %(app)s
), advisory AS (
  SELECT pid, bool_or(NOT granted) AS waiting, bool_or(granted) AS holding
  FROM pg_locks WHERE locktype = 'advisory' AND pid IN (SELECT pid FROM web)
  GROUP BY pid
)
SELECT
  count(*) FILTER (WHERE a.waiting),
  count(*) FILTER (WHERE a.holding),
  count(*) FILTER (WHERE a.holding AND w.state LIKE 'idle in transaction%%'),
  count(*) FILTER (WHERE a.holding AND w.wait_event LIKE 'WAL%%'),
  (SELECT count(*) FROM web
    WHERE state = 'active' OR state LIKE 'idle in transaction%%')
FROM advisory a JOIN web w USING (pid)
"""


@dataclass
class LockStats:
    """Means over the samples of one measured run."""

    samples: int = 0
    interval_ms: float = 0.0
    waiting: float = 0.0  # backends waiting for an advisory lock
    holding: float = 0.0  # backends holding one (the chain lock is exclusive: <= 1)
    holding_app: float = 0.0  # ... while idle in transaction (the app's own work)
    holding_wal: float = 0.0  # ... while flushing WAL (the COMMIT)
    busy: float = 0.0  # backends active or inside a transaction
    inflight: float = 0.0  # requests sent by the clients and not yet answered
    any_waiting: float = 0.0  # share of samples with at least one waiter
    max_waiting: int = 0  # most waiters in one sample

    def wait_ms_per_request(self, wall_s: float, requests: int) -> float:
        """Little's law: mean waiters x time / requests = mean wait per request."""
        return self.waiting * wall_s * 1000 / requests if requests else 0.0

    @property
    def waiting_share(self) -> float:
        """Share of the in-flight requests that are waiting for the lock."""
        return self.waiting / self.inflight if self.inflight else 0.0


class LockSampler:
    """Samples SAMPLE_SQL every ``interval_s`` from its own connection."""

    def __init__(
        self, dsn: str, app_name: str, inflight: InFlight, interval_s: float = 0.02
    ) -> None:
        self.dsn, self.app_name, self.interval_s = dsn, app_name, interval_s
        self.inflight = inflight
        self._rows: list[tuple[int, ...]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._conn = psycopg.connect(
            dsn, autocommit=True, application_name="bench-load-sampler"
        )
        self._started = 0.0
        self._stopped = 0.0

    def __enter__(self) -> LockSampler:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._stopped = time.perf_counter()
        self._conn.close()

    def _loop(self) -> None:
        """Sample at a fixed rate (a slow sample delays the next, never shifts all)."""
        params = {"app": self.app_name}
        due = time.perf_counter()
        while not self._stop.wait(max(0.0, due - time.perf_counter())):
            due = max(due + self.interval_s, time.perf_counter())
            row = self._conn.execute(SAMPLE_SQL, params).fetchone()
            if row is not None:
                counts = tuple(int(v or 0) for v in row)
                self._rows.append((*counts, self.inflight.now))

    def stats(self) -> LockStats:
        if not self._rows:
            return LockStats()
        rows = np.asarray(self._rows, dtype=float)
        means = rows.mean(axis=0)
        return LockStats(
            samples=len(rows),
            interval_ms=(self._stopped - self._started) * 1000 / len(rows),
            waiting=float(means[0]),
            holding=float(means[1]),
            holding_app=float(means[2]),
            holding_wal=float(means[3]),
            busy=float(means[4]),
            inflight=float(means[5]),
            any_waiting=float((rows[:, 0] > 0).mean()),
            max_waiting=int(rows[:, 0].max()),
        )
