"""Audit backlog: requests at the size limit are sealed in seconds, and verify stays
answerable while they are (issue 20, point 5).

Run::

    .venv/bin/python -m config.devstack test -- .venv/bin/python \\
        bench/audit_backlog.py [--requests 30] [--rounds 2]

The same processes as ``make run``: the script works in its own database
(``quiver_bench_backlog``, created, migrated and bootstrapped like ``make run``
does, dropped at the end), starts the Celery worker as ``config.devstack run_stack``
does (its ``worker_ready`` starts the real sealer thread, every
``QUIVER_AUDIT_SEAL_INTERVAL_S``) and gunicorn with ``config.devstack.web_command``
(2 workers, 60 s timeout). It writes ``--chain`` (20,000) sealed selection-like
events first (a chain to verify; 0 for none) and waits until the demo catalog is
embedded, then:

1. quiet verify: ``GET /api/v1/audit/verify`` five times (median), nothing unsealed;
2. per round, ``--requests`` ``POST /api/v1/select`` from 4 client threads, each
   query at the size limit (20,000 characters of random words, accented letters
   included: multi-byte text is where the old token function was quadratic; every
   other one a JSON object of the same canonical length), with the agent key's
   default rate limit. "unsealed" is the backlog the last answer leaves (rows the
   sealer has not reached yet; it runs every 2 s), "sealed after" the time from
   the last answer until every row is sealed (a side connection polls every
   20 ms), by the sealer thread alone (round "sealer"), or with verify requests
   sent one after another from the last answer until the backlog is sealed (at
   least 3; round "with verify": their latencies against the quiet median);
   "max delay" is the longest any of the round's rows waited from its INSERT to
   its seal. The verify requests start after the answers: during them both
   gunicorn workers are busy embedding 20,000-character queries, and a verify
   would wait for a worker, not for the chain;
3. "before": the old search-token function (0007's substr per trigram over the
   whole text) timed in SQL on one of the same queries, times the number of
   requests: what the backlog cost the sealer before audit/migrations/0013.

Prints one table. Progress goes to stderr; the worker's and gunicorn's logs to
``.quiver/bench-backlog-logs/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench._loadstack import (  # noqa: E402
    Janitor,
    MakeRun,
    create_database,
    drop_database,
    wait_embedded,
    with_database,
)

DATABASE = "quiver_bench_backlog"
LOGS = ROOT / ".quiver" / "bench-backlog-logs"
STATE = ROOT / ".quiver" / "bench-backlog"
LIMIT = 20_000
WORDS = "weather refund invoice café déjà vu straße naïve résumé über zoë ångström"


def say(message: str) -> None:
    print(f"[backlog] {message}", file=sys.stderr, flush=True)


def query_text(seed: int) -> str:
    rnd = random.Random(seed)
    words = WORDS.split()
    parts: list[str] = []
    length = 0
    while length < LIMIT:
        word = rnd.choice(words) + str(rnd.randrange(1000))
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:LIMIT]


def query_at_limit(seed: int) -> str | dict[str, str]:
    """A string of LIMIT characters, or (odd seeds) an object whose canonical JSON
    is LIMIT characters long."""
    text = query_text(seed)
    if seed % 2 == 0:
        return text
    value = {"q": ""}
    size = len(json.dumps(value, sort_keys=True, separators=(",", ":")))
    value["q"] = text[: LIMIT - size]
    return value


CHAIN_SQL = """
INSERT INTO audit_auditevent (event_type, actor_name, request_id, catalog_slug,
    catalog_version, summary, input, output, created, prev_hash, hash_version, key_id)
SELECT 'selection', 'bench-agent', gen_random_uuid(), 'default', 1,
    'weather in city ' || g || ' -> get_weather',
    jsonb_build_object('request', jsonb_build_object(
        'query', 'what is the weather in city ' || g, 'max_candidates', 3)),
    jsonb_build_object('tools', jsonb_build_array(
        jsonb_build_object('name', 'get_weather', 'score', 0.8)), 'excluded', '[]'),
    now() - interval '1 hour' + g * interval '1 millisecond', '', 2, ''
FROM generate_series(1, %s) g
"""


def prepare(chain: int) -> tuple[str, str]:
    """Migrate and bootstrap as ``make run`` does; an agent key (default rate
    limit) and a compliance key; ``chain`` sealed events written before."""
    import django

    django.setup()
    from django.core.management import call_command

    from identity.services.clients import create_api_client

    say("migrating and bootstrapping ...")
    call_command("migrate", verbosity=0, interactive=False)
    call_command("bootstrap", stdout=open(os.devnull, "w"))  # noqa: SIM115
    _, agent = create_api_client("bench-backlog-agent", "agent")
    _, compliance = create_api_client("bench-backlog-compliance", "compliance")
    from django.db import connection, connections

    from audit.sealing import seal_pending

    if chain:
        say(f"writing and sealing a chain of {chain} selection-like events ...")
        with connection.cursor() as cursor:
            cursor.execute(CHAIN_SQL, [chain])
        seal_pending()

    connections.close_all()
    return agent, compliance


def unsealed(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM audit_auditevent WHERE hash IS NULL"
        ).fetchone()
    return int(row[0]) if row else 0


def timed_get(client: httpx.Client, path: str) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.get(path)
    return (time.perf_counter() - started) * 1000, response.status_code


def quiet_verify(client: httpx.Client, dsn: str) -> float:
    deadline = time.monotonic() + 30
    while unsealed(dsn) and time.monotonic() < deadline:
        time.sleep(0.1)
    times = [timed_get(client, "/api/v1/audit/verify")[0] for _ in range(6)][1:]
    return statistics.median(times)


class Round:
    def __init__(self, name: str) -> None:
        self.name = name
        self.answers: list[int] = []
        self.answer_ms: list[float] = []
        self.sealed_after_s: float | None = None
        self.backlog = 0
        self.max_delay_s: float | None = None
        self.verify_ms: list[float] = []
        self.verify_codes: list[int] = []


def _select(url: str, key: str, seed: int) -> tuple[int, float]:
    body = {"query": query_at_limit(seed)}
    started = time.perf_counter()
    response = httpx.post(
        f"{url}/api/v1/select",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=120,
    )
    return response.status_code, (time.perf_counter() - started) * 1000


def backlog_round(
    name: str, stack: MakeRun, dsn: str, keys: tuple[str, str], args: Any, base: int
) -> Round:
    agent, compliance = keys
    result = Round(name)
    first_id = last_id(dsn) + 1
    with ThreadPoolExecutor(4) as pool:
        futures = [
            pool.submit(_select, stack.url, agent, base + n)
            for n in range(args.requests)
        ]
        for future in futures:
            code, ms = future.result()
            result.answers.append(code)
            result.answer_ms.append(ms)
    answered = time.monotonic()
    result.backlog = unsealed(dsn)
    poller = threading.Thread(target=_poll_sealed, args=(dsn, answered, result))
    poller.start()
    if name == "with verify":
        _verify_while_unsealed(stack.url, compliance, dsn, result)
    poller.join()
    result.max_delay_s = max_seal_delay(dsn, first_id)
    return result


def last_id(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(max(id), 0) FROM audit_auditevent"
        ).fetchone()
    return int(row[0]) if row else 0


def max_seal_delay(dsn: str, first_id: int) -> float | None:
    """The longest a selection of the round waited to be sealed."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM max(sealed_at - created)) FROM audit_auditevent "
            "WHERE id >= %s AND event_type = 'selection'",
            [first_id],
        ).fetchone()
    return None if not row or row[0] is None else float(row[0])


def _poll_sealed(dsn: str, answered: float, result: Round) -> None:
    """When every row is sealed, from the last answer (at most 60 s)."""
    while time.monotonic() - answered < 60:
        if unsealed(dsn) == 0:
            result.sealed_after_s = time.monotonic() - answered
            return
        time.sleep(0.02)


def _verify_while_unsealed(url: str, key: str, dsn: str, result: Round) -> None:
    """Verify, one after another, while any row is unsealed (at least 3 times)."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        while len(result.verify_ms) < 3 or unsealed(dsn):
            ms, code = timed_get(client, "/api/v1/audit/verify")
            result.verify_ms.append(ms)
            result.verify_codes.append(code)


def old_function_ms(dsn: str) -> float:
    """0007's trigrams of one query at the limit, timed in SQL."""
    text = query_text(0)
    sql = (
        "SELECT cardinality(ARRAY(SELECT DISTINCT 't:' || substr(u, i, 3) FROM "
        "(SELECT upper(%s) AS u) AS t, generate_series(1, length(u) - 2) AS i))"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.perf_counter()
        conn.execute(sql, [text]).fetchone()
        return (time.perf_counter() - started) * 1000


def table(rounds: list[Round], quiet_ms: float, old_ms: float, args: Any) -> str:
    cores = os.cpu_count()
    lines = [
        f"audit backlog: {args.requests} POST /select at the size limit ({LIMIT} "
        f"characters), gunicorn 2 workers + Celery worker with its sealer, "
        f"{cores} cores",
        "",
        f"{'round':<14}{'answers':>10}{'answer p50':>12}{'unsealed':>10}"
        f"{'sealed after':>14}{'max delay':>11}"
        f"{'verify n':>10}{'verify p50':>12}{'verify max':>12}{'max/quiet':>11}",
    ]
    for r in rounds:
        ok = f"{sum(c == 200 for c in r.answers)}/{len(r.answers)}"
        sealed = (
            "not in 60 s" if r.sealed_after_s is None else f"{r.sealed_after_s:.2f} s"
        )
        delay = "-" if r.max_delay_s is None else f"{r.max_delay_s:.2f} s"
        if r.verify_ms:
            p50 = f"{statistics.median(r.verify_ms):.0f} ms"
            top = max(r.verify_ms)
            worst, ratio = f"{top:.0f} ms", f"{top / quiet_ms:.2f}x"
            count = f"{len(r.verify_ms)}"
            if any(c != 200 for c in r.verify_codes):
                count += "!"
        else:
            p50 = worst = ratio = count = "-"
        lines.append(
            f"{r.name:<14}{ok:>10}{statistics.median(r.answer_ms):>9.0f} ms"
            f"{r.backlog:>10}{sealed:>14}{delay:>11}{count:>10}{p50:>12}{worst:>12}{ratio:>11}"
        )
    lines += [
        "",
        f"verify, quiet (median of 5, a chain of {args.chain} events before the "
        f"rounds): {quiet_ms:.0f} ms",
        f"before (0007's token function, one query at the limit): {old_ms:.0f} ms "
        f"per row, about {old_ms * args.requests / 1000:.1f} s of sealing for "
        f"{args.requests} rows",
    ]
    return "\n".join(lines)


def run(args: Any, dsn: str) -> str:
    agent, compliance = prepare(args.chain)
    env = {**os.environ, "DEBUG": "false"}
    env.setdefault("SECRET_KEY", os.urandom(32).hex())
    stack = MakeRun(env, LOGS, "bench-backlog")
    try:
        stack.wait_ready()
        say("waiting for the worker to embed the demo catalog ...")
        wait_embedded(dsn)
        say("warming up ...")
        for n in range(4):
            _select(stack.url, agent, 10_000 + n)
        headers = {"Authorization": f"Bearer {compliance}"}
        with httpx.Client(base_url=stack.url, headers=headers, timeout=120) as c:
            quiet_ms = quiet_verify(c, dsn)
        rounds: list[Round] = []
        for k in range(args.rounds):
            for name in ("sealer", "with verify"):
                say(f"round {k + 1}: {name} ...")
                rounds.append(
                    backlog_round(
                        name, stack, dsn, (agent, compliance), args, 1000 * len(rounds)
                    )
                )
                time.sleep(3)
    finally:
        stack.stop()
    return table(rounds, quiet_ms, old_function_ms(dsn), args)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--chain", type=int, default=20_000, help="events before")
    args = parser.parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url:
        raise SystemExit("run through `python -m config.devstack test -- ...`")
    shutil.rmtree(LOGS, ignore_errors=True)  # its checkpoints were another chain's
    say(f"creating the database {DATABASE}")
    create_database(admin_url, DATABASE)
    janitor = Janitor(admin_url, DATABASE)
    dsn = with_database(admin_url, DATABASE)
    os.environ["DATABASE_URL"] = dsn
    # The compiled model is kept between runs; the admin password is this run's.
    os.environ["QUIVER_STATE_DIR"] = str(STATE)
    os.environ["QUIVER_AUDIT_CHECKPOINT_FILE"] = str(LOGS / "checkpoints.jsonl")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        text = run(args, dsn)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(admin_url, DATABASE)
        janitor.done()
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
