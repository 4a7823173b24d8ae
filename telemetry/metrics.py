"""What each Quiver process counts for ``GET /metrics`` (Prometheus).

Names follow Prometheus' rules (a ``quiver_`` prefix, base units, ``_total`` on
counters) and every label value comes from a bounded set, never a tool's arguments,
a query or a key. With ``PROMETHEUS_MULTIPROC_DIR`` set before this module is
imported, each process writes its values there and ``/metrics`` adds them up; what
the database holds is read at scrape time (``telemetry.collector``), not counted here.
Every metric: docs/reference/metrics.md.
"""

from __future__ import annotations

import threading

from django.conf import settings
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Our metrics only: in one process ``/metrics`` renders this registry (not the
# library's default one, which also holds its process and GC collectors).
REGISTRY = CollectorRegistry(auto_describe=True)
OTHER = "other"
NONE = "none"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
UPSTREAM_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 45, 60)
TASK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)

HTTP_REQUESTS = Counter(
    "quiver_http_requests",
    "HTTP requests answered, by route pattern, method and status code.",
    ["route", "method", "status"],
    registry=REGISTRY,
)
HTTP_DURATION = Histogram(
    "quiver_http_request_duration_seconds",
    "Time from a request reaching Quiver to its answer, by route pattern and method.",
    ["route", "method"],
    buckets=REQUEST_BUCKETS,
    registry=REGISTRY,
)
SELECTIONS = Counter(
    "quiver_selections",
    "Selection answers (REST and MCP), by catalog, the scorer that ranked and "
    "the channel.",
    ["catalog", "scorer", "channel"],
    registry=REGISTRY,
)
SELECTION_CACHE_HITS = Counter(
    "quiver_selection_cache_hits",
    "Selection answers served from the process's answer cache, by catalog.",
    ["catalog"],
    registry=REGISTRY,
)
SELECTION_NO_TOOL = Counter(
    "quiver_selection_no_tool_answers",
    "Selection answers that offered no tool (no_tool set), by catalog.",
    ["catalog"],
    registry=REGISTRY,
)
SELECTION_DEGRADED = Counter(
    "quiver_selection_degraded_answers",
    "Selection answers ranked by a fallback (time ran out, a scorer failed), "
    "by catalog.",
    ["catalog"],
    registry=REGISTRY,
)
SELECTION_DURATION = Histogram(
    "quiver_selection_duration_seconds",
    "Time to answer one selection inside Quiver, from the request's arrival to "
    "its audit row, by channel.",
    ["channel"],
    buckets=REQUEST_BUCKETS,
    registry=REGISTRY,
)
TOOL_CALLS = Counter(
    "quiver_tool_calls",
    "Tool calls through Quiver by outcome (ran, failed, timed_out, refused, "
    "denied, pending...) and source (catalog/source; none before one is known).",
    ["source", "outcome"],
    registry=REGISTRY,
)
UPSTREAM_DURATION = Histogram(
    "quiver_tool_call_upstream_duration_seconds",
    "Time the upstream MCP server took for a call (retries included), by source "
    "and outcome (ran, failed, timed_out).",
    ["source", "outcome"],
    buckets=UPSTREAM_BUCKETS,
    registry=REGISTRY,
)
TASKS = Counter(
    "quiver_celery_tasks",
    "Celery tasks a worker finished, by task name and state.",
    ["task", "state"],
    registry=REGISTRY,
)
TASK_DURATION = Histogram(
    "quiver_celery_task_duration_seconds",
    "Time a Celery task ran in a worker, by task name.",
    ["task"],
    buckets=TASK_BUCKETS,
    registry=REGISTRY,
)
WEBHOOK_OUTCOMES = ("delivered", "retrying", "failed", "refused")
WEBHOOK_DELIVERIES = Counter(
    "quiver_webhook_deliveries",
    "Webhook delivery attempts by outcome: delivered (a 2xx), retrying (failed, "
    "another attempt is due), failed (no attempt left, or it cannot be sent), "
    "refused (the destination is a denied address).",
    ["outcome"],
    registry=REGISTRY,
)
# Every outcome is a series from the start, so a rate or an alert has a zero to
# compare with before the first failure.
for _outcome in WEBHOOK_OUTCOMES:
    WEBHOOK_DELIVERIES.labels(_outcome)
# "liveall": one series per live process (the pid label is added); a dead
# process's series goes away (telemetry.exposition forgets dead processes).
PROCESS_START = Gauge(
    "quiver_process_start_time_seconds",
    "When each live Quiver process (web or worker) started, Unix time.",
    ["role"],
    multiprocess_mode="liveall",
    registry=REGISTRY,
)

# What a process keeps for its catalogs (selection.adapters.kept), by kind.
MEMORY_KINDS = ("snapshot", "answer", "definition")
CATALOG_MEMORY_BUDGET = Gauge(
    "quiver_catalog_memory_budget_bytes",
    "What each live process may keep for its catalogs (QUIVER_MEMORY_BUDGET_MB).",
    multiprocess_mode="liveall",
    registry=REGISTRY,
)
CATALOG_MEMORY_RESIDENT = Gauge(
    "quiver_catalog_memory_resident_bytes",
    "What each live process keeps for its catalogs now, by kind: snapshot (a "
    "catalog's tools, lexical index, vectors and learnt signal), answer and "
    "definition (the answer and tool definition caches).",
    ["kind"],
    multiprocess_mode="liveall",
    registry=REGISTRY,
)
CATALOG_SNAPSHOTS_RESIDENT = Gauge(
    "quiver_catalog_snapshots_resident",
    "Catalog snapshots each live process keeps now.",
    multiprocess_mode="liveall",
    registry=REGISTRY,
)
CATALOG_MEMORY_EVICTIONS = Counter(
    "quiver_catalog_memory_evictions",
    "Entries a process dropped to stay within its budget (or past a cache's "
    "size), by kind; an evicted snapshot is built again by its catalog's next "
    "answer.",
    ["kind"],
    registry=REGISTRY,
)
CATALOG_SNAPSHOT_BUILDS = Counter(
    "quiver_catalog_snapshot_builds",
    "Catalog snapshots a process made: built (from the catalog's rows, first "
    "or after an eviction) or patched (after a change, from the old one).",
    ["how"],
    registry=REGISTRY,
)
for _kind in MEMORY_KINDS:
    CATALOG_MEMORY_EVICTIONS.labels(_kind)
for _how in ("built", "patched"):
    CATALOG_SNAPSHOT_BUILDS.labels(_how)


class BoundedLabel:
    """The first ``limit`` distinct values this process sees keep their name; any
    later one is ``other``, so a label never grows past the setting."""

    def __init__(self, setting: str) -> None:
        self.setting = setting
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, value: str) -> str:
        if value in self.seen:
            return value
        with self.lock:
            if len(self.seen) < int(getattr(settings, self.setting)):
                self.seen.add(value)
                return value
        return OTHER


catalog_label = BoundedLabel("QUIVER_METRICS_MAX_LABEL_VALUES")
source_label = BoundedLabel("QUIVER_METRICS_MAX_LABEL_VALUES")


def source_name(catalog: str, source: str) -> str:
    """A source's label: its catalog and name (names are unique per catalog)."""
    return source_label(f"{catalog}/{source}")


def request_answered(route: str, method: str, status: int, seconds: float) -> None:
    method = method if method in METHODS else OTHER
    HTTP_REQUESTS.labels(route, method, str(status)).inc()
    HTTP_DURATION.labels(route, method).observe(seconds)


def selection_answered(
    catalog: str,
    scorer: str,
    channel: str,
    *,
    cached: bool,
    no_tool: bool,
    degraded: bool,
    seconds: float,
) -> None:
    label = catalog_label(catalog)
    SELECTIONS.labels(label, scorer, channel).inc()
    if cached:
        SELECTION_CACHE_HITS.labels(label).inc()
    if no_tool:
        SELECTION_NO_TOOL.labels(label).inc()
    if degraded:
        SELECTION_DEGRADED.labels(label).inc()
    SELECTION_DURATION.labels(channel).observe(seconds)


def tool_call_recorded(source: str | None, outcome: str) -> None:
    """One attempt's outcome (``source``: from ``source_name``, None if none)."""
    TOOL_CALLS.labels(source or NONE, outcome).inc()


def upstream_answered(source: str, outcome: str, seconds: float) -> None:
    UPSTREAM_DURATION.labels(source, outcome).observe(seconds)


def task_finished(task: str, state: str, seconds: float | None) -> None:
    TASKS.labels(task, state.lower()).inc()
    if seconds is not None:
        TASK_DURATION.labels(task).observe(seconds)


def webhook_delivered(outcome: str) -> None:
    """One webhook delivery attempt's outcome (notify.delivery)."""
    WEBHOOK_DELIVERIES.labels(outcome if outcome in WEBHOOK_OUTCOMES else OTHER).inc()


def memory_kept(budget: int, kept: dict[str, int], snapshots: int) -> None:
    """The process's budget and what it keeps for its catalogs now, by kind."""
    CATALOG_MEMORY_BUDGET.set(budget)
    for kind in MEMORY_KINDS:
        CATALOG_MEMORY_RESIDENT.labels(kind).set(kept.get(kind, 0))
    CATALOG_SNAPSHOTS_RESIDENT.set(snapshots)


def memory_evicted(kind: str) -> None:
    CATALOG_MEMORY_EVICTIONS.labels(kind if kind in MEMORY_KINDS else OTHER).inc()


def snapshot_made(how: str) -> None:
    """A catalog snapshot built from its rows or patched from the last one."""
    CATALOG_SNAPSHOT_BUILDS.labels(how).inc()
