"""Where the audit write's time goes: one selection-sized ``record_event``.

Run: ``.venv/bin/python -m config.devstack test -- .venv/bin/python
bench/audit_write.py [--n 500]`` (embedded Postgres, its ``quiver`` database).

Prints p50/p95 (ms) of: the INSERT with its commit (what ``/select`` pays, a WAL
flush to disk); the same INSERT in a transaction that is rolled back (no flush);
a bare round trip; and, for comparison only, the commit with
``synchronous_commit = off``, which Quiver does not use: an answer must never
outlive a crash without its audit row.

Then what the write adds to an answer that takes ``--render-ms`` of CPU to
serialise and render after it (JSON encoding, holding the GIL as rendering does):
written first (``QUIVER_AUDIT_SEND_EARLY=false``: INSERT + commit, then render)
against sent early (audit/writer.py: send, render, collect the COMMIT's reply).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from audit.services import (  # noqa: E402
    EventFields,
    PendingEvent,
    record_event,
)
from audit.writer import close_all  # noqa: E402

PICK = {"score": 0.5, "signals": {"bm25f": 0.4}}
LEFT_OUT = {"stage": "policy", "reason": "role"}
OUTPUT = {
    "tools": [{"name": f"tool_{i}", **PICK} for i in range(3)],
    "excluded": [{"name": f"x_{i}", **LEFT_OUT} for i in range(12)],
    "stats": {"considered": 200, "latency_ms": 5.0},
}
INPUT = {"request": {"query": "refund the last order of the customer " * 4}}


def _row() -> EventFields:
    """One selection-sized event, with ids of its own."""
    return EventFields(
        actor=None,
        request_id=uuid.uuid4(),
        selection_id=uuid.uuid4(),
        catalog_slug="default",
        summary="bench",
        input=INPUT,
        output=OUTPUT,
    )


def _record() -> None:
    record_event("selection", **_row())


def _record_soon() -> PendingEvent:
    return record_event("selection", soon=True, **_row())


def _render(ms: float) -> None:
    """CPU work standing in for serialising and rendering the answer."""
    until = time.perf_counter() + ms / 1000
    body = {**OUTPUT, "definitions": [INPUT] * 20}
    while time.perf_counter() < until:
        json.dumps(body)


def _rolled_back() -> None:
    with transaction.atomic():
        _record()
        transaction.set_rollback(True)


def _round_trip() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _async_commit() -> None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")
        _record()


def _timed(step: Callable[[], None], n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        step()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(n * 0.95)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--render-ms", type=float, default=2.0)
    args = parser.parse_args()
    n, render_ms = args.n, args.render_ms
    call_command("migrate", verbosity=0)
    print(f"load average {os.getloadavg()[0]:.1f}, {n} writes each")
    print(f"{'step':58}{'p50 ms':>8}{'p95 ms':>8}")
    for label, step in (
        ("record_event: INSERT + commit (what /select pays)", _record),
        ("record_event: INSERT, rolled back (no WAL flush)", _rolled_back),
        ("SELECT 1 round trip", _round_trip),
        ("INSERT + commit, synchronous_commit off (not used)", _async_commit),
    ):
        p50, p95 = _timed(step, n)
        print(f"{label:58}{p50:>8.2f}{p95:>8.2f}")
    print(f"\nwhat the write adds to an answer rendered in {render_ms:.1f} ms of CPU")
    print(f"{'path':58}{'p50 ms':>8}{'p95 ms':>8}")
    only, _ = _timed(lambda: _render(render_ms), n)

    def first() -> None:
        _record()
        _render(render_ms)

    def early() -> None:
        handle = _record_soon()
        _render(render_ms)
        handle.wait()

    for _ in range(2):  # alternated, so load drift hits both alike
        for label, step in (
            ("written first, then rendered", first),
            ("sent early, rendered, reply collected", early),
        ):
            p50, p95 = _timed(step, n)
            print(f"{label:58}{p50 - only:>8.2f}{p95 - only:>8.2f}")
    close_all()


if __name__ == "__main__":
    main()
