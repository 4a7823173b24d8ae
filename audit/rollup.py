"""The dashboard's hourly summary: derived data, never the audit record.

The sealer sums the rows it seals after the mark into the summary tables, per catalog
and UTC hour, and moves the mark in the same transaction, so each row is summed
exactly once; the dashboard adds the live tail from the events table, so its counts
are exact and only its percentiles approximate (one histogram bucket,
``BUCKET_RATIO``). How it is filled and rebuilt: docs/explanation/audit-chain.md,
Sealing.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

# Rows summed per transaction beyond what the sealer just sealed (the backfill's
# pace; a normal round sums only its own batch).
ROLLUP_STEP = 20_000
# Latency histogram: bucket b holds [2^(b/4), 2^((b+1)/4)) ms.
BUCKETS_PER_DOUBLING = 4
BUCKET_RATIO = 2 ** (1 / BUCKETS_PER_DOUBLING)
LATENCY_SQL = "(output -> 'stats' ->> 'latency_ms')::float"
LATENCY_BUCKET_SQL = (
    f"floor(ln(greatest({LATENCY_SQL}, 0.001)) * {BUCKETS_PER_DOUBLING} / ln(2))"
    "::smallint"
)
HOUR_SQL = "date_trunc('hour', created, 'UTC')"


def _array(key: str) -> str:
    """``output -> key`` as a JSON array (anything else: empty)."""
    return (
        f"CASE jsonb_typeof(output -> '{key}') WHEN 'array' THEN output -> '{key}' "
        "ELSE '[]'::jsonb END"
    )


NEW_ROWS = "seq > %s AND seq <= %s AND event_type IN ('selection', 'validation')"

HOURS_SQL = f"""
INSERT INTO audit_rollup_hour AS r (catalog_slug, hour, selections, no_tools,
    degraded, cached, checks, invalid_checks, calls, invalid_calls, not_offered,
    unknown_tool, not_allowed)
SELECT catalog_slug, {HOUR_SQL},
    count(*) FILTER (WHERE event_type = 'selection'),
    count(*) FILTER (WHERE event_type = 'selection'
                     AND output -> 'tools' = '[]'::jsonb),
    count(*) FILTER (WHERE event_type = 'selection'
                     AND output @> '{{"degraded": true}}'::jsonb),
    count(*) FILTER (WHERE event_type = 'selection'
                     AND output @> '{{"cached": true}}'::jsonb),
    count(*) FILTER (WHERE event_type = 'validation'),
    count(*) FILTER (WHERE event_type = 'validation'
                     AND output @> '{{"valid": false}}'::jsonb),
    coalesce(sum(c.calls), 0), coalesce(sum(c.invalid), 0),
    coalesce(sum(c.not_offered), 0), coalesce(sum(c.unknown_tool), 0),
    coalesce(sum(c.not_allowed), 0)
FROM audit_auditevent
LEFT JOIN LATERAL (
    SELECT count(*) AS calls,
        count(*) FILTER (WHERE call @> '{{"valid": false}}'::jsonb) AS invalid,
        count(*) FILTER (WHERE call -> 'flags' @> '["not_offered"]') AS not_offered,
        count(*) FILTER (WHERE call -> 'flags' @> '["unknown_tool"]') AS unknown_tool,
        count(*) FILTER (WHERE call -> 'flags' @> '["not_allowed"]') AS not_allowed
    FROM jsonb_array_elements({_array("calls")}) AS call
) AS c ON event_type = 'validation'
WHERE {NEW_ROWS}
GROUP BY 1, 2
ON CONFLICT (hour, catalog_slug) DO UPDATE SET
    selections = r.selections + excluded.selections,
    no_tools = r.no_tools + excluded.no_tools,
    degraded = r.degraded + excluded.degraded,
    cached = r.cached + excluded.cached,
    checks = r.checks + excluded.checks,
    invalid_checks = r.invalid_checks + excluded.invalid_checks,
    calls = r.calls + excluded.calls,
    invalid_calls = r.invalid_calls + excluded.invalid_calls,
    not_offered = r.not_offered + excluded.not_offered,
    unknown_tool = r.unknown_tool + excluded.unknown_tool,
    not_allowed = r.not_allowed + excluded.not_allowed
"""

NAMES_SQL = f"""
INSERT INTO audit_rollup_name AS r (catalog_slug, hour, kind, name, count)
SELECT catalog_slug, {HOUR_SQL}, w.kind, coalesce(x ->> w.field, ''), count(*)
FROM audit_auditevent,
    LATERAL (VALUES ('offered', 'tools', 'name'), ('excluded', 'excluded', 'name'),
                    ('rule', 'excluded', 'reason')) AS w(kind, list, field),
    LATERAL jsonb_array_elements(
        CASE jsonb_typeof(output -> w.list) WHEN 'array' THEN output -> w.list
        ELSE '[]'::jsonb END) AS x
WHERE {NEW_ROWS} AND event_type = 'selection'
GROUP BY 1, 2, 3, 4
ON CONFLICT (kind, hour, catalog_slug, name) DO UPDATE SET
    count = r.count + excluded.count
"""

NAME_DAYS_SQL = (
    NAMES_SQL.replace("audit_rollup_name ", "audit_rollup_name_day ")
    .replace("(catalog_slug, hour, kind", "(catalog_slug, day, kind")
    .replace(HOUR_SQL, "date_trunc('day', created, 'UTC')")
    .replace("(kind, hour, catalog_slug, name)", "(kind, day, catalog_slug, name)")
)

LATENCIES_SQL = f"""
INSERT INTO audit_rollup_latency AS r (catalog_slug, hour, bucket, count)
SELECT catalog_slug, {HOUR_SQL}, {LATENCY_BUCKET_SQL}, count(*)
FROM audit_auditevent
WHERE {NEW_ROWS} AND event_type = 'selection' AND {LATENCY_SQL} IS NOT NULL
GROUP BY 1, 2, 3
ON CONFLICT (hour, catalog_slug, bucket) DO UPDATE SET
    count = r.count + excluded.count
"""


def roll_up(cursor: CursorWrapper, head: int, step: int = ROLLUP_STEP) -> int:
    """Sum the sealed rows after the mark, up to ``head`` and at most ``step`` past
    what the mark was, and move the mark; return the new mark. The caller holds
    the chain lock inside its transaction (the sealer, or ``rebuild``)."""
    cursor.execute("SELECT seq FROM audit_rollup_mark WHERE id = 1 FOR UPDATE")
    row = cursor.fetchone()
    if row is None:  # a table emptied by hand: start over, from the first row
        cursor.execute("INSERT INTO audit_rollup_mark (id, seq) VALUES (1, 0)")
        row = (0,)
    mark = int(row[0])
    upto = min(head, mark + step)
    if upto <= mark:
        return mark
    for sql in (HOURS_SQL, NAMES_SQL, NAME_DAYS_SQL, LATENCIES_SQL):
        cursor.execute(sql, [mark, upto])
    cursor.execute("UPDATE audit_rollup_mark SET seq = %s WHERE id = 1", [upto])
    return upto


def catch_up(*, rebuild: bool = False, step: int = 100_000) -> int:
    """Sum every sealed row not summed yet (with ``rebuild``: empty the tables
    first and sum every row again), in one transaction under the chain lock, so
    the dashboard sees the old summary until the new one is whole. Returns the
    mark."""
    from audit.sealing import chain_head, take_chain_lock

    with transaction.atomic(), connection.cursor() as cursor:
        take_chain_lock(cursor, wait=True)
        if rebuild:
            # DELETE, not TRUNCATE: readers keep the old rows until the commit.
            for table in ("hour", "name", "name_day", "latency", "mark"):
                cursor.execute(f"DELETE FROM audit_rollup_{table}")
        head = chain_head(cursor)[0]
        mark = roll_up(cursor, head, step)
        while mark < head:
            mark = roll_up(cursor, head, step)
        return mark
