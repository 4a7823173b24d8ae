"""What the database knows, read when ``/metrics`` is asked (not counted).

Approvals waiting for a person, audit rows waiting for the sealer, jobs waiting
for a worker (imports and syncs, evaluations and learns), tools waiting for their
embedding and the state of each source are
rows, the same whichever process answers: they are read at scrape time with two
statements (one of aggregates, one of the sources), each served by an index, so
a scrape costs milliseconds (bench/README.md, "Metrics scrape"). A database that
does not answer gives ``quiver_metrics_database_up 0`` and the process metrics
still come out: a scrape never fails because a part is down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric

from audit.models import AuditEvent
from calls.models import Approval, ApprovalStatus
from catalog.choices import EmbeddingStatus
from catalog.models import Catalog, Tool
from jobs.choices import JobState
from jobs.models import Job
from learning.models import Evaluation, LearntModel
from sources.models import Source, SourceStatus

log = logging.getLogger(__name__)
# A backlog is counted up to this many rows: past it the count is a floor (the
# alert has long fired) and the scrape stays cheap whatever the backlog.
COUNT_CAP = 1_000_000

WAITING = """count(*) FILTER (WHERE state = %(queued)s) AS queued,
     count(*) FILTER (WHERE state = %(running)s) AS running,
     min(created) FILTER (WHERE state = %(queued)s) AS since"""
STATE_SQL = f"""
SELECT a.pending, a.since, u.unsealed, u.since, j.queued, j.running, j.since,
       e.pending, l.queued, l.running, l.since
FROM
  (SELECT count(*) AS pending, min(created) AS since
     FROM {Approval._meta.db_table} WHERE status = %(pending)s) AS a,
  (SELECT (SELECT count(*) FROM (SELECT 1 FROM {AuditEvent._meta.db_table}
             WHERE hash IS NULL LIMIT %(cap)s) AS rows) AS unsealed,
          (SELECT created FROM {AuditEvent._meta.db_table}
             WHERE hash IS NULL ORDER BY id LIMIT 1) AS since) AS u,
  (SELECT {WAITING} FROM {Job._meta.db_table}
     WHERE state IN (%(queued)s, %(running)s)) AS j,
  (SELECT count(*) AS pending FROM (SELECT 1 FROM {Tool._meta.db_table}
     WHERE embedding_status = %(embedding)s LIMIT %(cap)s) AS rows) AS e,
  (SELECT {WAITING} FROM (
     SELECT state, created FROM {Evaluation._meta.db_table}
       WHERE state IN (%(queued)s, %(running)s)
     UNION ALL
     SELECT state, created FROM {LearntModel._meta.db_table}
       WHERE state IN (%(queued)s, %(running)s)) AS runs) AS l
"""
SOURCES_SQL = f"""
SELECT c.slug, s.name, s.status, s.last_success
FROM {Source._meta.db_table} s JOIN {Catalog._meta.db_table} c ON c.id = s.catalog_id
ORDER BY s.id
"""


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
    return {
        "pending": ApprovalStatus.PENDING,
        "queued": JobState.QUEUED,
        "running": JobState.RUNNING,
        "embedding": EmbeddingStatus.PENDING,
        "cap": COUNT_CAP,
    }


def _state(cursor: Any) -> tuple[Any, ...]:
    cursor.execute(STATE_SQL, state_parameters())
    # Ages against the app's clock, which stamped the rows' created (Django's
    # timezone.now()), not the database's.
    return (*cursor.fetchone(), timezone.now())


def _sources(cursor: Any) -> list[tuple[Any, ...]]:
    cursor.execute(SOURCES_SQL)
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
        depth.add_metric([queue, JobState.QUEUED], queued)
        depth.add_metric([queue, JobState.RUNNING], running)
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
    totals = dict.fromkeys(SourceStatus.values, 0)
    for index, (catalog, name, state, last_success) in enumerate(rows):
        totals[state] = totals.get(state, 0) + 1
        if index >= cap:
            continue
        for value in SourceStatus.values:
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
