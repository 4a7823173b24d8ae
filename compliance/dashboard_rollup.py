"""The dashboard from the hourly summary (audit.rollup) plus the live tail.

Each number is one SQL statement: the summary's rows for the range's hours, UNION
ALL the events not summed yet (not sealed, or after the mark) read from the events
table. One statement sees one snapshot, so an event is counted either in the
summary or in the tail, never both and never neither, even while the sealer
commits. Counts are exact; p50/p95 come from the latency histogram (within one
bucket, ``BUCKET_RATIO``) unless every latency of the range is still in the tail,
then they are exact.

Only ranges on whole UTC hours in a whole-hour time zone can use hourly rows (the
presets and chosen days always are when TIME_ZONE is); any other falls back to
``build_dashboard`` over the events.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from audit.choices import EventType
from audit.models import AuditEvent
from audit.querysets import AuditEventQuerySet
from audit.rollup import BUCKET_RATIO, LATENCY_BUCKET_SQL, LATENCY_SQL, _array
from compliance.dashboard import (
    TOP,
    Count,
    Dashboard,
    Window,
    _fetch,
    _zeros,
    build_dashboard,
    tool_calls,
)

MARK_SQL = "SELECT seq FROM audit_rollup_mark WHERE id = 1"
CHECK_COLUMNS = (
    "checks",
    "invalid_checks",
    "calls",
    "invalid_calls",
    "not_offered",
    "unknown_tool",
    "not_allowed",
)


def _on_the_hour(moment: datetime) -> bool:
    utc = moment.astimezone(UTC)
    offset = timezone.localtime(moment).utcoffset() or timedelta()
    whole = offset.total_seconds() % 3600 == 0
    return whole and utc.minute == utc.second == utc.microsecond == 0


def summary_dashboard(catalogs: Collection[str] | None, window: Window) -> Dashboard:
    """The dashboard of the events of ``catalogs`` (None: every catalog) over
    ``window``, from the hourly summary plus the live tail."""
    events = AuditEvent.objects.all()
    if catalogs is not None:
        events = events.filter(catalog_slug__in=list(catalogs))
    if not (_on_the_hour(window.start) and _on_the_hour(window.end)):
        return build_dashboard(events, window)
    try:
        part = _Part(events, window, catalogs)
    except EmptyResultSet:  # no catalog at all
        return Dashboard(window=window, buckets=_zeros(window, {}))
    excluded, reasons = part.exclusions()
    return Dashboard(
        window=window,
        buckets=part.buckets(),
        **part.summary(),
        **part.latency(),
        picked=part.picked(),
        excluded=excluded,
        reasons=reasons,
        checks=part.checks(),
        calls=tool_calls(events, window),
        summarised=True,
    )


class _Part:
    """The SQL pieces of one reader's range: the summary's WHERE and the tail."""

    def __init__(
        self,
        events: AuditEventQuerySet,
        window: Window,
        catalogs: Collection[str] | None,
    ) -> None:
        self.window = window
        self.where = "hour >= %s AND hour < %s"
        self.params: list[Any] = [window.start, window.end]
        if catalogs is not None:
            self.where += " AND catalog_slug = ANY(%s)"
            self.params.append(list(catalogs))
        self._name_rows(window, catalogs)
        with connection.cursor() as cursor:
            cursor.execute(MARK_SQL)
            row = cursor.fetchone()
        # The mark read now only helps the planner; the statement's own subquery
        # decides (a mark moved since makes the first condition merely loose).
        planned = int(row[0]) if row else 0
        unsummed = Q(hash__isnull=True) | (
            Q(seq__gt=planned) & Q(seq__gt=RawSQL(f"coalesce(({MARK_SQL}), 0)", []))
        )
        tail = events.filter(
            unsummed, created__gte=window.start, created__lt=window.end
        )
        self.selections = tail.filter(event_type=EventType.SELECTION)
        self.validations = tail.filter(event_type=EventType.VALIDATION)
        str(self.selections.query)  # raises EmptyResultSet now, not mid-way

    def _name_rows(self, window: Window, catalogs: Collection[str] | None) -> None:
        """Tool and rule counts: the daily rows for the whole UTC days in the range,
        the hourly rows for the hours before and after them."""
        first = _utc_midnight(window.start, up=True)
        last = _utc_midnight(window.end, up=False)
        if first >= last:  # no whole day: hours only
            first = last = window.end
        hours = "((hour >= %s AND hour < %s) OR (hour >= %s AND hour < %s))"
        where = " AND catalog_slug = ANY(%s)" if catalogs is not None else ""
        extra = [list(catalogs)] if catalogs is not None else []
        self.name_rows = (
            "SELECT kind, name, count FROM audit_rollup_name_day "
            f"WHERE day >= %s AND day < %s{where} UNION ALL "
            f"SELECT kind, name, count FROM audit_rollup_name WHERE {hours}{where}"
        )
        self.name_params = [first, last, *extra]
        self.name_params += [window.start, first, last, window.end, *extra]

    def _rows(
        self,
        sql: str,
        tail: AuditEventQuerySet,
        head: list[Any] | None = None,
        middle: list[Any] | None = None,
    ) -> list[Any]:
        """``sql``'s rows: ``SUMMARY_WHERE`` is the summary's range and catalogs,
        ``WHERE_CLAUSE`` the tail's; ``head`` are the parameters before the first,
        ``middle`` those between the two."""
        summary = self.params if "SUMMARY_WHERE" in sql else []
        if "NAME_ROWS" in sql:
            summary = self.name_params
        sql = sql.replace("SUMMARY_WHERE", self.where)
        sql = sql.replace("NAME_ROWS", self.name_rows)
        return _fetch(sql, tail, *(head or []), *summary, *(middle or []))

    def buckets(self) -> list[Any]:
        kind = "hour" if self.window.hourly else "day"
        zone = timezone.get_current_timezone_name()
        rows = self._rows(BUCKETS_SQL, self.selections, [kind, zone], [kind, zone])
        return _zeros(self.window, {bucket: int(n) for bucket, n in rows})

    def summary(self) -> dict[str, Any]:
        row = self._rows(SUMMARY_SQL, self.selections)[0]
        names = ("selections", "no_tools", "degraded", "cached")
        return {name: int(value or 0) for name, value in zip(names, row, strict=True)}

    def checks(self) -> dict[str, int]:
        row = self._rows(CHECKS_SQL, self.validations)[0]
        names = ("events", "invalid_events", *CHECK_COLUMNS[2:])
        return {name: int(value or 0) for name, value in zip(names, row, strict=True)}

    def picked(self) -> list[Count]:
        rows = self._rows(PICKED_SQL, self.selections)
        return [Count(name, int(n)) for name, n in rows]

    def exclusions(self) -> tuple[list[Count], list[Count]]:
        tools: list[Count] = []
        reasons: list[Count] = []
        for kind, name, n in self._rows(EXCLUSIONS_SQL, self.selections):
            (tools if kind == "excluded" else reasons).append(Count(name, int(n)))
        return tools, reasons

    def latency(self) -> dict[str, Any]:
        rows = self._rows(LATENCY_ROWS_SQL, self.selections)
        if not any(source == "summary" for source, _, _ in rows):
            p50, p95 = self._rows(EXACT_SQL, self.selections)[0]
            return {"latency_p50": p50, "latency_p95": p95}
        histogram: dict[int, int] = {}
        for _, bucket, n in rows:
            histogram[int(bucket)] = histogram.get(int(bucket), 0) + int(n)
        return {
            "latency_p50": histogram_percentile(histogram, 0.5),
            "latency_p95": histogram_percentile(histogram, 0.95),
        }


def _utc_midnight(moment: datetime, up: bool) -> datetime:
    """The UTC midnight at or after (``up``) or at or before ``moment``."""
    utc = moment.astimezone(UTC)
    day = utc.replace(hour=0, minute=0, second=0, microsecond=0)
    return day + timedelta(days=1) if up and day < utc else day


def bucket_of(latency_ms: float) -> int:
    """The histogram bucket of a latency (as LATENCY_BUCKET_SQL computes it)."""
    return math.floor(math.log(max(latency_ms, 0.001)) / math.log(BUCKET_RATIO))


def histogram_percentile(histogram: dict[int, int], q: float) -> float | None:
    """The ``q`` percentile as ``percentile_cont`` ranks it (0-based rank
    q * (n - 1)), placed inside its bucket geometrically by its rank there."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = q * (total - 1)
    below = 0
    for bucket in sorted(histogram):
        n = histogram[bucket]
        if rank < below + n:
            share = (rank - below + 0.5) / n
            return float(BUCKET_RATIO ** (bucket + share))
        below += n
    return float(BUCKET_RATIO ** (max(histogram) + 1))


BUCKETS_SQL = """
SELECT bucket, sum(n) FROM (
    SELECT date_trunc(%s, hour AT TIME ZONE %s) AS bucket, selections AS n
    FROM audit_rollup_hour WHERE SUMMARY_WHERE
    UNION ALL
    SELECT date_trunc(%s, created AT TIME ZONE %s), 1
    FROM audit_auditevent WHERE WHERE_CLAUSE
) AS t GROUP BY 1
"""
SUMMARY_SQL = """
SELECT sum(selections), sum(no_tools), sum(degraded), sum(cached) FROM (
    SELECT selections, no_tools, degraded, cached
    FROM audit_rollup_hour WHERE SUMMARY_WHERE
    UNION ALL
    SELECT 1, (output -> 'tools' = '[]'::jsonb)::int,
        (output @> '{"degraded": true}'::jsonb)::int,
        (output @> '{"cached": true}'::jsonb)::int
    FROM audit_auditevent WHERE WHERE_CLAUSE
) AS t
"""

CHECKS_SQL = f"""
SELECT sum(checks), sum(invalid_checks), sum(calls), sum(invalid_calls),
    sum(not_offered), sum(unknown_tool), sum(not_allowed) FROM (
    SELECT {", ".join(CHECK_COLUMNS)} FROM audit_rollup_hour WHERE SUMMARY_WHERE
    UNION ALL
    SELECT 1, (output @> '{{"valid": false}}'::jsonb)::int, c.*
    FROM audit_auditevent, LATERAL (
        SELECT count(*),
            count(*) FILTER (WHERE call @> '{{"valid": false}}'::jsonb),
            count(*) FILTER (WHERE call -> 'flags' @> '["not_offered"]'),
            count(*) FILTER (WHERE call -> 'flags' @> '["unknown_tool"]'),
            count(*) FILTER (WHERE call -> 'flags' @> '["not_allowed"]')
        FROM jsonb_array_elements({_array("calls")}) AS call
    ) AS c
    WHERE WHERE_CLAUSE
) AS t
"""

PICKED_SQL = f"""
SELECT name, sum(n) AS total FROM (
    SELECT name, count AS n FROM (NAME_ROWS) AS rn WHERE kind = 'offered'
    UNION ALL
    SELECT coalesce(x ->> 'name', ''), 1 FROM audit_auditevent,
        LATERAL jsonb_array_elements({_array("tools")}) AS x
    WHERE WHERE_CLAUSE
) AS t GROUP BY name ORDER BY total DESC, name LIMIT {TOP}
"""

EXCLUSIONS_SQL = f"""
SELECT kind, name, total FROM (
    SELECT kind, name, sum(n) AS total, row_number() OVER (
        PARTITION BY kind ORDER BY sum(n) DESC, name) AS rank
    FROM (
        SELECT kind, name, count AS n FROM (NAME_ROWS) AS rn
        WHERE kind IN ('excluded', 'rule')
        UNION ALL
        SELECT w.kind, coalesce(x ->> w.field, ''), 1 FROM audit_auditevent,
            LATERAL jsonb_array_elements({_array("excluded")}) AS x,
            (VALUES ('excluded', 'name'), ('rule', 'reason')) AS w(kind, field)
        WHERE WHERE_CLAUSE
    ) AS t GROUP BY kind, name
) AS ranked WHERE rank <= {TOP} ORDER BY kind, total DESC, name
"""

LATENCY_ROWS_SQL = f"""
SELECT 'summary', bucket, count FROM audit_rollup_latency WHERE SUMMARY_WHERE
UNION ALL
SELECT 'tail', {LATENCY_BUCKET_SQL}, 1 FROM audit_auditevent
WHERE {LATENCY_SQL} IS NOT NULL AND WHERE_CLAUSE
"""

EXACT_SQL = f"""
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY {LATENCY_SQL}),
    percentile_cont(0.95) WITHIN GROUP (ORDER BY {LATENCY_SQL})
FROM audit_auditevent WHERE WHERE_CLAUSE
"""
