"""What the database knows, read when ``/metrics`` is asked (not counted).

Approvals, audit rows waiting for the sealer, jobs, tools waiting for their
embedding and each source's state are rows, the same whichever process answers, so
they are read at scrape time in two indexed statements; a database that does not
answer gives ``quiver_metrics_database_up 0`` and the rest still comes out. The apps
whose rows are counted sit above telemetry, so each lends its SQL at start-up
(``register_read``, ``register_sources``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric

from audit.models import AuditEvent

log = logging.getLogger(__name__)
# A backlog is counted up to this many rows: past it the count is a floor (the
# alert has long fired) and the scrape stays cheap whatever the backlog.
COUNT_CAP = 1_000_000

# The states of the ``quiver_jobs`` series.
QUEUED, RUNNING = "queued", "running"
# What a queue's read gives: its rows queued and running, and since when the oldest
# queued one waits (a read using it passes its states as %(queued)s, %(running)s).
WAITING = """count(*) FILTER (WHERE state = %(queued)s) AS queued,
     count(*) FILTER (WHERE state = %(running)s) AS running,
     min(created) FILTER (WHERE state = %(queued)s) AS since"""
EVENTS = AuditEvent._meta.db_table
AUDIT_READ = f"""(SELECT (SELECT count(*) FROM (SELECT 1 FROM {EVENTS}
             WHERE hash IS NULL LIMIT %(cap)s) AS rows) AS unsealed,
          (SELECT created FROM {EVENTS}
             WHERE hash IS NULL ORDER BY id LIMIT 1) AS since)"""
# The reads the apps lend, by alias: the columns each gives, in this order.
READS = {
    "a": ("approvals", "pending, since"),
    "j": ("jobs", "queued, running, since"),
    "e": ("embeddings", "pending"),
    "l": ("learning_runs", "queued, running, since"),
}


@dataclass(frozen=True)
class Read:
    """One app's rows as a FROM item of the scrape's first statement: ``sql`` is a
    parenthesised SELECT giving one row of the columns ``READS`` names for it,
    with %(name)s placeholders filled from ``params`` (and %(cap)s, the count
    cap). Two reads giving one name give it the same value."""

    sql: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SourcesRead:
    """Each source's (catalog slug, name, status, last success), and the statuses
    a source may have: the scrape's second statement."""

    sql: str
    statuses: tuple[str, ...]


_reads: dict[str, Read] = {}
_lent_sources: list[SourcesRead] = []


def register_read(name: str, read: Read) -> None:
    """Lend the read ``name`` (one of ``READS``)."""
    if name not in {name for name, _ in READS.values()}:
        raise ValueError(f"telemetry: no read named {name!r}")
    _reads[name] = read


def register_sources(read: SourcesRead) -> None:
    _lent_sources[:] = [read]


def _lent(name: str) -> Read:
    if name not in _reads:
        raise ImproperlyConfigured(f"telemetry: no app lent the {name!r} read")
    return _reads[name]


def state_sql() -> str:
    """The first statement: the audit chain's read and every lent one, one row."""
    items = [f"{AUDIT_READ} AS u"] + [
        f"{_lent(name).sql} AS {alias}" for alias, (name, _) in READS.items()
    ]
    joined = ",\n  ".join(items)
    return f"""
SELECT a.pending, a.since, u.unsealed, u.since, j.queued, j.running, j.since,
       e.pending, l.queued, l.running, l.since
FROM {joined}
"""


def sources_read() -> SourcesRead:
    if not _lent_sources:
        raise ImproperlyConfigured("telemetry: no app lent the sources read")
    return _lent_sources[0]


class DatabaseCollector:
    """Gauges of the rows waiting somewhere, as of the scrape."""

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        try:
            with connection.cursor() as cursor:
                state = _state(cursor)
                sources = _sources(cursor)
        except DatabaseError as exc:
            log.warning("metrics: the database did not answer: %s", exc)
            yield _gauge("quiver_metrics_database_up", "", 0)
            return
        yield _gauge("quiver_metrics_database_up", "", 1)
        yield from _state_metrics(state)
        yield from _source_metrics(sources)
        yield _gauge(
            "quiver_metrics_database_duration_seconds",
            "Time this scrape spent reading the database.",
            time.perf_counter() - started,
        )


def state_parameters() -> dict[str, Any]:
    """Every lent read's parameters and the cap."""
    params: dict[str, Any] = {"cap": COUNT_CAP}
    for name, _ in READS.values():
        for key, value in _lent(name).params.items():
            if params.setdefault(key, value) != value:
                raise ImproperlyConfigured(f"telemetry: two values for %({key})s")
    return params


def _state(cursor: Any) -> tuple[Any, ...]:
    cursor.execute(state_sql(), state_parameters())
    # Ages against the app's clock, which stamped the rows' created (Django's
    # timezone.now()), not the database's.
    return (*cursor.fetchone(), timezone.now())


def _sources(cursor: Any) -> list[tuple[Any, ...]]:
    cursor.execute(sources_read().sql)
    return [tuple(row) for row in cursor.fetchall()]


def _age(now: datetime, since: datetime | None) -> float:
    return max(0.0, (now - since).total_seconds()) if since is not None else 0.0


def _state_metrics(row: tuple[Any, ...]) -> Iterator[Metric]:
    pending, oldest, unsealed, unsealed_since = row[:4]
    jobs, embeddings, runs, now = row[4:7], row[7], row[8:11], row[11]
    yield _gauge("quiver_approvals_pending", "Approvals waiting for a person.", pending)
    yield _gauge(
        "quiver_approval_oldest_pending_age_seconds",
        "How long the oldest pending approval has waited (0: none waits).",
        _age(now, oldest),
    )
    yield _gauge(
        "quiver_audit_unsealed_events",
        "Audit rows written and not yet sealed into the chain.",
        unsealed,
    )
    yield _gauge(
        "quiver_audit_seal_lag_seconds",
        "Age of the oldest audit row not yet sealed (0: all are sealed).",
        _age(now, unsealed_since),
    )
    yield from _queue_metrics(now, {"quiver": jobs, "learning": runs})
    yield _gauge(
        "quiver_tool_embeddings_pending",
        "Tools whose embedding is not computed yet (searchable by words only).",
        embeddings,
    )


def _queue_metrics(now: datetime, queues: dict[str, Any]) -> Iterator[Metric]:
    """Per Celery queue: ``quiver`` (imports, re-indexes, bulk edits, syncs) and
    ``learning`` (evaluations and learns)."""
    depth = GaugeMetricFamily(
        "quiver_jobs",
        "Background jobs queued or running, by queue.",
        labels=["queue", "state"],
    )
    age = GaugeMetricFamily(
        "quiver_job_oldest_queued_age_seconds",
        "How long the oldest queued job has waited for a worker (0: none waits).",
        labels=["queue"],
    )
    for queue, (queued, running, since) in queues.items():
        depth.add_metric([queue, QUEUED], queued)
        depth.add_metric([queue, RUNNING], running)
        age.add_metric([queue], _age(now, since))
    yield depth
    yield age


def _source_metrics(rows: list[tuple[Any, ...]]) -> Iterator[Metric]:
    """Per source up to the label cap (by age), and the count per status of all."""
    cap = int(settings.QUIVER_METRICS_MAX_LABEL_VALUES)
    status = GaugeMetricFamily(
        "quiver_source_status",
        "1 for each source's current sync status (new, syncing, ok, error).",
        labels=["catalog", "source", "status"],
    )
    success = GaugeMetricFamily(
        "quiver_source_last_success_timestamp_seconds",
        "When each source's last sync succeeded, Unix time (absent: never).",
        labels=["catalog", "source"],
    )
    statuses = sources_read().statuses
    totals = dict.fromkeys(statuses, 0)
    for index, (catalog, name, state, last_success) in enumerate(rows):
        totals[state] = totals.get(state, 0) + 1
        if index >= cap:
            continue
        for value in statuses:
            status.add_metric([catalog, name, value], 1 if value == state else 0)
        if last_success is not None:
            success.add_metric([catalog, name], last_success.timestamp())
    yield status
    yield success
    counts = GaugeMetricFamily(
        "quiver_sources", "Sources per sync status.", labels=["status"]
    )
    for value, count in totals.items():
        counts.add_metric([value], count)
    yield counts


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation or _DOCS.get(name, name), value=value)


_DOCS = {
    "quiver_metrics_database_up": "1 when this scrape could read the database, "
    "else 0 (the database gauges are then missing).",
}
