"""The compliance dashboard's numbers: what selections and tool-call checks did over
a time range, aggregated by Postgres (GROUP BY, date_trunc, jsonb_array_elements,
percentile_cont); no event is ever loaded into Python.

Every query starts from an ``AuditEventQuerySet`` the caller has already scoped
(``visible_to``, the chosen catalog), so the dashboard counts exactly the events the
audit list would show that reader. Its WHERE clause is compiled by Django and
reused inside hand-written SQL for what the ORM cannot say (a lateral
``jsonb_array_elements``, ``percentile_cont``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.utils import timezone

from audit.choices import CALL_OUTCOMES, CALL_STARTED, EventType
from audit.querysets import AuditEventQuerySet
from config.params import DayField

# Preset -> days it covers (24h: the past 24 whole hours instead).
PRESETS = {"24h": 1, "7d": 7, "30d": 30}
DEFAULT_RANGE = "7d"
# Hourly columns up to two days, daily beyond; a custom range is capped so its
# chart stays readable and its scan bounded.
HOURLY_UP_TO = timedelta(hours=48)
MAX_DAYS = 92
TOP = 10


@dataclass(frozen=True)
class Window:
    """A half-open time range [start, end) and the size of its chart's columns."""

    start: datetime
    end: datetime

    @property
    def hourly(self) -> bool:
        return self.end - self.start <= HOURLY_UP_TO

    @property
    def step(self) -> timedelta:
        return timedelta(hours=1) if self.hourly else timedelta(days=1)

    @property
    def days(self) -> tuple[date, date]:
        """The first and last day it touches (the audit list filters by days)."""
        last = timezone.localtime(self.end - timedelta(microseconds=1)).date()
        return timezone.localtime(self.start).date(), last


def _midnight(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def preset_window(name: str, now: datetime | None = None) -> Window:
    """Last 24 hours: 24 whole hours, ending with the current one; last N days: N
    calendar days, ending with today (so a window holds still within its hour or
    day, and its last column is the current one)."""
    now = timezone.localtime(now or timezone.now())
    if name == "24h":
        hour = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        return Window(hour - timedelta(hours=24), hour)
    first = now.date() - timedelta(days=PRESETS[name] - 1)
    return Window(_midnight(first), _midnight(now.date() + timedelta(days=1)))


class DashboardForm(forms.Form):
    """The range, a preset or chosen days (days win over a preset), and an
    optional catalog, in plain words."""

    range = forms.ChoiceField(
        required=False,
        label="Range",
        choices=[
            ("24h", "Last 24 hours"),
            ("7d", "Last 7 days"),
            ("30d", "Last 30 days"),
        ],
    )
    since = DayField(required=False, label="From (day)")
    until = DayField(required=False, label="To (day)")
    catalog = forms.ChoiceField(required=False, label="Catalog")

    def __init__(self, *args: Any, catalogs: Iterable[str] = (), **kw: Any) -> None:
        super().__init__(*args, **kw)
        field = self.fields["catalog"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "All my catalogs")] + [(s, s) for s in catalogs]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if {"since", "until"} & set(self.errors):
            return data  # a day out of range is its own error; no range to check
        since, until = data.get("since"), data.get("until")
        if not (since or until):
            data["range"] = data.get("range") or DEFAULT_RANGE
            return data
        data["range"] = "days"
        if since is None:
            self.add_error("since", "Choose the first day of the range.")
            return data
        until = until or timezone.localdate()
        if until < since:
            self.add_error("until", "The last day must not be before the first.")
        elif (until - since).days + 1 > MAX_DAYS:
            self.add_error("until", f"A range may span at most {MAX_DAYS} days.")
        data["until"] = until
        return data

    def window(self, now: datetime | None = None) -> Window:
        """The chosen range (call ``is_valid`` first and only when it is)."""
        data = self.cleaned_data
        if data["range"] != "days":
            return preset_window(data["range"], now)
        return Window(_midnight(data["since"]), _midnight(data["until"] + timedelta(1)))


@dataclass(frozen=True)
class Count:
    label: str
    count: int


@dataclass(frozen=True)
class Bucket:
    """One column of the selections chart: its start (local time) and count."""

    start: datetime
    count: int
    hourly: bool

    @property
    def label(self) -> str:
        return self.start.strftime("%Y-%m-%d %H:00" if self.hourly else "%Y-%m-%d")

    @property
    def short(self) -> str:
        """The axis label: the hour, or the day with its month."""
        return self.start.strftime("%H:00" if self.hourly else "%b %d")


@dataclass(frozen=True)
class Dashboard:
    """Everything the dashboard draws, for one reader, range and catalog."""

    window: Window
    buckets: list[Bucket]
    selections: int = 0
    no_tools: int = 0
    degraded: int = 0
    cached: int = 0
    latency_p50: float | None = None
    latency_p95: float | None = None
    picked: list[Count] = field(default_factory=list)
    excluded: list[Count] = field(default_factory=list)
    reasons: list[Count] = field(default_factory=list)
    checks: dict[str, int] = field(default_factory=dict)
    # Tool calls through Quiver by outcome, and ``total`` (``tool_calls``).
    calls: dict[str, int] = field(default_factory=dict)
    # Read from the hourly summary plus the live tail (compliance.dashboard_rollup):
    # p50/p95 then come from its latency histogram.
    summarised: bool = False

    @property
    def call_rows(self) -> list[tuple[str, str, int]]:
        """(outcome, its words, count) for each tool-call outcome, in order."""
        return [
            (name, name.replace("_", " "), self.calls.get(name, 0))
            for name in CALL_OUTCOMES
        ]

    @property
    def empty(self) -> bool:
        return (
            not self.selections
            and not self.checks.get("events")
            and not self.calls.get("total")
        )


def _where(events: AuditEventQuerySet) -> tuple[str, list[Any]]:
    """The queryset's WHERE clause as SQL over ``audit_auditevent``."""
    query = events.query
    compiler = query.get_compiler(using=events.db)
    sql, params = query.where.as_sql(compiler, compiler.connection)
    return sql, list(params)


def _fetch(sql: str, events: AuditEventQuerySet, *head: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` whose ``WHERE_CLAUSE`` is the events' filter; ``head`` are
    parameters that come before it."""
    where, params = _where(events)
    with connection.cursor() as cursor:
        cursor.execute(sql.replace("WHERE_CLAUSE", where), [*head, *params])
        return cursor.fetchall()


def build_dashboard(events: AuditEventQuerySet, window: Window) -> Dashboard:
    """The dashboard of ``events`` (already scoped to the reader) over ``window``."""
    in_range = events.filter(created__gte=window.start, created__lt=window.end)
    selections = in_range.filter(event_type=EventType.SELECTION)
    checks = in_range.filter(event_type=EventType.VALIDATION)
    try:
        summary = _summary(selections)
        excluded, reasons = _exclusions(selections)
        return Dashboard(
            window=window,
            buckets=_buckets(selections, window),
            **summary,
            picked=_picked(selections),
            excluded=excluded,
            reasons=reasons,
            checks=_checks(checks),
            calls=tool_calls(events, window),
        )
    except EmptyResultSet:  # a reader who may see nothing
        return Dashboard(window=window, buckets=_zeros(window, {}))


def _bucket_starts(window: Window) -> list[datetime]:
    """Each column's start, local and naive, the first one truncated."""
    start = timezone.localtime(window.start).replace(
        minute=0, second=0, microsecond=0, tzinfo=None
    )
    if not window.hourly:
        start = start.replace(hour=0)
    end = timezone.localtime(window.end).replace(tzinfo=None)
    starts = []
    while start < end:
        starts.append(start)
        start += window.step
    return starts


def _zeros(window: Window, counts: dict[datetime, int]) -> list[Bucket]:
    """One count per column, zero where nothing happened."""
    return [
        Bucket(start, counts.get(start, 0), window.hourly)
        for start in _bucket_starts(window)
    ]


BUCKETS_SQL = """
SELECT date_trunc(%s, created AT TIME ZONE %s) AS bucket, count(*)
FROM audit_auditevent WHERE WHERE_CLAUSE GROUP BY 1
"""


def _buckets(selections: AuditEventQuerySet, window: Window) -> list[Bucket]:
    kind = "hour" if window.hourly else "day"
    zone = timezone.get_current_timezone_name()
    rows = _fetch(BUCKETS_SQL, selections, kind, zone)
    return _zeros(window, {bucket: count for bucket, count in rows})


SUMMARY_SQL = """
SELECT count(*),
    count(*) FILTER (WHERE output -> 'tools' = '[]'::jsonb),
    count(*) FILTER (WHERE output @> jsonb_build_object('degraded', true)),
    count(*) FILTER (WHERE output @> jsonb_build_object('cached', true)),
    percentile_cont(0.5) WITHIN GROUP (ORDER BY latency),
    percentile_cont(0.95) WITHIN GROUP (ORDER BY latency)
FROM (
    SELECT output, (output -> 'stats' ->> 'latency_ms')::float AS latency
    FROM audit_auditevent WHERE WHERE_CLAUSE
) AS selections
"""


def _summary(selections: AuditEventQuerySet) -> dict[str, Any]:
    """Counts and the served latency's p50/p95 (``stats.latency_ms``, ms)."""
    total, no_tools, degraded, cached, p50, p95 = _fetch(SUMMARY_SQL, selections)[0]
    return {
        "selections": total,
        "no_tools": no_tools,
        "degraded": degraded,
        "cached": cached,
        "latency_p50": p50,
        "latency_p95": p95,
    }


PICKED_SQL = f"""
SELECT pick ->> 'name' AS name, count(*) AS n
FROM audit_auditevent
CROSS JOIN LATERAL jsonb_array_elements(
    CASE jsonb_typeof(output -> 'tools') WHEN 'array' THEN output -> 'tools'
    ELSE '[]'::jsonb END) AS pick
WHERE WHERE_CLAUSE
GROUP BY 1 ORDER BY n DESC, name LIMIT {TOP}
"""


def _picked(selections: AuditEventQuerySet) -> list[Count]:
    return [Count(name, n) for name, n in _fetch(PICKED_SQL, selections)]


# One scan for both: counts per tool and per reason (GROUPING SETS), the first
# TOP of each kept by a window over the grouping.
EXCLUSIONS_SQL = f"""
SELECT kind, label, n FROM (
    SELECT GROUPING(x ->> 'name') AS kind,
        coalesce(x ->> 'name', x ->> 'reason', '') AS label, count(*) AS n,
        row_number() OVER (PARTITION BY GROUPING(x ->> 'name')
                           ORDER BY count(*) DESC,
                           coalesce(x ->> 'name', x ->> 'reason', '')) AS rank
    FROM audit_auditevent
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE jsonb_typeof(output -> 'excluded') WHEN 'array'
        THEN output -> 'excluded' ELSE '[]'::jsonb END) AS x
    WHERE WHERE_CLAUSE
    GROUP BY GROUPING SETS ((x ->> 'name'), (x ->> 'reason'))
) AS ranked
WHERE rank <= {TOP} ORDER BY kind, n DESC, label
"""


def _exclusions(selections: AuditEventQuerySet) -> tuple[list[Count], list[Count]]:
    """The most excluded tools and the exclusions' reasons (the rules), counted
    over the exclusions each record names."""
    tools: list[Count] = []
    reasons: list[Count] = []
    for kind, label, n in _fetch(EXCLUSIONS_SQL, selections):
        (tools if kind == 0 else reasons).append(Count(label, n))
    return tools, reasons


CHECKS_SQL = """
SELECT count(DISTINCT id),
    count(DISTINCT id) FILTER (WHERE output @> jsonb_build_object('valid', false)),
    count(call),
    count(call) FILTER (WHERE call @> jsonb_build_object('valid', false)),
    count(call) FILTER (WHERE call -> 'flags' @> '["not_offered"]'::jsonb),
    count(call) FILTER (WHERE call -> 'flags' @> '["unknown_tool"]'::jsonb),
    count(call) FILTER (WHERE call -> 'flags' @> '["not_allowed"]'::jsonb)
FROM audit_auditevent
LEFT JOIN LATERAL jsonb_array_elements(
    CASE jsonb_typeof(output -> 'calls') WHEN 'array' THEN output -> 'calls'
    ELSE '[]'::jsonb END) AS call ON true
WHERE WHERE_CLAUSE
"""
CHECK_NAMES = (
    "events",
    "invalid_events",
    "calls",
    "invalid_calls",
    "not_offered",
    "unknown_tool",
    "not_allowed",
)


def _checks(checks: AuditEventQuerySet) -> dict[str, int]:
    """Tool-call checks: events, invalid ones, and their calls by flag (the
    single-tool /validate endpoint's events have no calls)."""
    return dict(zip(CHECK_NAMES, _fetch(CHECKS_SQL, checks)[0], strict=True))


CALLS_SQL = """
SELECT output ->> 'outcome', count(*) FROM audit_auditevent
WHERE WHERE_CLAUSE GROUP BY 1
"""


def tool_calls(events: AuditEventQuerySet, window: Window) -> dict[str, int]:
    """Tool calls through Quiver in ``window`` by outcome (each outcome, zero when
    none, an unknown one under ``other``) and their ``total``; read from the
    events (the (event_type, created) index), not the hourly summary. A call's
    ``started`` event is not an outcome: each call counts once."""
    calls = events.filter(
        event_type=EventType.TOOL_CALL,
        created__gte=window.start,
        created__lt=window.end,
    ).exclude(output__contains={"outcome": CALL_STARTED})
    counts = dict.fromkeys((*CALL_OUTCOMES, "other", "total"), 0)
    try:
        rows = _fetch(CALLS_SQL, calls)
    except EmptyResultSet:  # a reader who may see nothing
        return counts
    for outcome, n in rows:
        counts[outcome if outcome in CALL_OUTCOMES else "other"] += int(n)
        counts["total"] += int(n)
    return counts


# The exclusion rules in plain words (an unknown code is shown as it is).
REASON_WORDS = {
    "hidden": "hidden from the caller",
    "status": "not active",
    "blocked": "blocked by the request",
    "not_allowed": "not on the request's allow list",
    "unsafe": "unsafe, not allowed",
    "role": "the caller's roles may not use it",
    "no_schema_mode": "no schema, mode not allowed",
    "capability": "lacks a required capability",
    "budget_cost": "over the cost budget",
    "category": "another category",
    "budget_tokens": "over the token budget",
    "below_min_score": "score under the minimum",
    "lexical_overlap": "no word in common with the query",
    "cut": "ranked below the picks",
}


def reason_words(code: str) -> str:
    return REASON_WORDS.get(code, code.replace("_", " "))
