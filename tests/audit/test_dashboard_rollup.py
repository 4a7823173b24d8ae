"""The dashboard's hourly summary (audit.rollup, compliance.dashboard_rollup): filled by
the sealer in the seal's transaction, it gives the same numbers as aggregating the
raw events, never counts an event twice, rebuilds to the same rows, and estimates
p50/p95 within one histogram bucket."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from audit.models import AuditEvent, AuditRollupHour, AuditRollupMark
from audit.rollup import catch_up, roll_up
from audit.sealing import seal_pending
from compliance.dashboard import Dashboard, Window, build_dashboard, preset_window
from compliance.dashboard_rollup import bucket_of, summary_dashboard
from tests.audit.test_dashboard import selection

pytestmark = pytest.mark.django_db
NOW = timezone.make_aware(datetime(2026, 11, 20, 15, 30))


def check(
    when: datetime, *calls: tuple[bool, tuple[str, ...]], catalog: str = "default"
) -> None:
    """A tool-call validation with ``calls`` as (valid, flags)."""
    AuditEvent.objects.create(
        event_type="validation",
        actor_name="api:bot",
        request_id=uuid.uuid4(),
        catalog_slug=catalog,
        input={},
        output={
            "valid": all(valid for valid, _ in calls),
            "calls": [{"valid": v, "flags": list(f)} for v, f in calls],
        },
        created=when,
    )


def mixed_events(rng: random.Random, count: int = 120) -> None:
    """Selections and checks over 40 days, two catalogs, odd shapes included."""
    tools = [f"tool_{i}" for i in range(14)]
    reasons = ["unsafe", "role", "cut", "blocked"]
    for _ in range(count):
        when = NOW - timedelta(minutes=rng.randrange(40 * 24 * 60))
        catalog = rng.choice(["default", "other"])
        if rng.random() < 0.2:
            flags = rng.choice([(), ("not_offered",), ("unknown_tool", "not_allowed")])
            check(when, (not flags, flags), (True, ()), catalog=catalog)
            continue
        picks = tuple(rng.sample(tools, rng.randrange(4)))
        left = tuple((rng.choice(tools), rng.choice(reasons)) for _ in range(3))
        selection(
            when,
            picks,
            left,
            latency=rng.choice([None, rng.lognormvariate(3, 1)]),
            degraded=rng.random() < 0.1,
            catalog=catalog,
        )
    check(NOW)  # a single-tool check: no calls
    AuditEvent.objects.create(  # a selection of an older shape: no lists at all
        event_type="selection",
        actor_name="api:bot",
        request_id=uuid.uuid4(),
        catalog_slug="default",
        input={},
        output={"cached": True},
        created=NOW - timedelta(hours=2),
    )


def counts(board: Dashboard) -> Dashboard:
    """The board without its percentiles and its source (compared apart)."""
    return replace(board, latency_p50=None, latency_p95=None, summarised=False)


def rollup_rows() -> dict[str, list[tuple[Any, ...]]]:
    rows = {}
    with connection.cursor() as cursor:
        for table in ("hour", "name", "name_day", "latency"):
            cursor.execute(f"SELECT * FROM audit_rollup_{table} ORDER BY 2, 3, 4, 5")
            rows[table] = [row[1:] for row in cursor.fetchall()]
    return rows


def everything() -> Any:
    return AuditEvent.objects.all()


HOUR = NOW.replace(minute=0)
EDGES = Window(HOUR - timedelta(days=3, hours=5), HOUR - timedelta(hours=3))


@pytest.mark.parametrize("preset", ["24h", "7d", "30d", "edges"])
def test_the_summary_gives_the_raw_aggregates_numbers_after_sealing(preset):
    """ "edges": whole days read from the daily rows, the hours around them hourly."""
    mixed_events(random.Random(7), 300)
    seal_pending()
    window = EDGES if preset == "edges" else preset_window(preset, NOW)
    assert AuditRollupHour.objects.exists()
    assert not AuditEvent.objects.filter(hash__isnull=True).exists()
    summary = summary_dashboard(None, window)
    raw = build_dashboard(everything(), window)
    assert summary.summarised and raw.selections > 0
    assert counts(summary) == counts(raw)


def test_a_catalog_scope_counts_only_that_catalogs_events_in_both_paths():
    mixed_events(random.Random(8))
    seal_pending()
    window = preset_window("30d", NOW)
    for scope in (["other"], ["default", "other"], []):
        raw = build_dashboard(everything().filter(catalog_slug__in=scope), window)
        assert counts(summary_dashboard(scope, window)) == counts(raw)
    assert summary_dashboard(["other"], window).selections < (
        summary_dashboard(None, window).selections
    )


def test_events_not_sealed_yet_are_read_from_the_tail_exactly():
    rng = random.Random(9)
    mixed_events(rng, 60)
    seal_pending()
    mixed_events(rng, 40)  # the live tail: not sealed
    window = preset_window("30d", NOW)
    assert counts(summary_dashboard(None, window)) == counts(
        build_dashboard(everything(), window)
    )


def test_sealing_again_counts_nothing_twice():
    rng = random.Random(10)
    mixed_events(rng, 80)
    seal_pending()
    before = rollup_rows()
    assert seal_pending() == 0
    call_command("audit_rollup")
    assert rollup_rows() == before
    mixed_events(rng, 30)
    seal_pending()
    window = preset_window("30d", NOW)
    assert counts(summary_dashboard(None, window)) == counts(
        build_dashboard(everything(), window)
    )


def test_a_rebuild_gives_the_rows_the_sealer_summed_batch_by_batch():
    mixed_events(random.Random(11), 90)
    seal_pending(batch=7)
    incremental = rollup_rows()
    head = AuditEvent.objects.order_by("-seq").values_list("seq", flat=True)[0]
    assert AuditRollupMark.objects.get().seq == head
    call_command("audit_rollup", "--rebuild")
    assert rollup_rows() == incremental
    assert AuditRollupMark.objects.get().seq == head


def test_a_backfill_behind_the_chain_head_still_gives_exact_counts():
    mixed_events(random.Random(12), 90)
    seal_pending()
    catch_up(rebuild=True, step=25)  # all caught up, in steps
    with connection.cursor() as cursor:  # as if the migration just ran
        cursor.execute("UPDATE audit_rollup_mark SET seq = 0")
        cursor.execute("DELETE FROM audit_rollup_hour")
        cursor.execute("DELETE FROM audit_rollup_name")
        cursor.execute("DELETE FROM audit_rollup_name_day")
        cursor.execute("DELETE FROM audit_rollup_latency")
    window = preset_window("7d", NOW)
    raw = build_dashboard(everything(), window)
    assert counts(summary_dashboard(None, window)) == counts(raw)
    with connection.cursor() as cursor:
        roll_up(cursor, head=10**9, step=40)  # part of the way, as the sealer does
    assert AuditRollupMark.objects.get().seq == 40
    assert counts(summary_dashboard(None, window)) == counts(raw)


def test_percentiles_from_the_histogram_are_within_one_bucket_of_the_exact_ones():
    rng = random.Random(13)
    for _ in range(400):
        when = NOW - timedelta(minutes=rng.randrange(6 * 24 * 60))
        selection(when, ("refund",), latency=rng.lognormvariate(3.5, 0.8))
    seal_pending()
    window = preset_window("7d", NOW)
    estimate = summary_dashboard(None, window)
    exact = build_dashboard(everything(), window)
    assert estimate.latency_p50 and exact.latency_p50
    assert estimate.latency_p95 and exact.latency_p95
    assert abs(bucket_of(estimate.latency_p50) - bucket_of(exact.latency_p50)) <= 1
    assert abs(bucket_of(estimate.latency_p95) - bucket_of(exact.latency_p95)) <= 1
    assert estimate.latency_p50 != exact.latency_p50  # it did use the histogram


def test_a_range_of_only_unsealed_events_has_exact_percentiles():
    for ms in range(1, 101):
        selection(NOW, ("refund",), latency=float(ms))
    window = preset_window("24h", NOW)
    estimate = summary_dashboard(None, window)
    assert estimate.latency_p50 == pytest.approx(50.5)


def test_the_page_says_its_numbers_come_from_the_hourly_summary(as_compliance, trail):
    seal_pending()
    response = as_compliance.get("/audit/dashboard/?range=24h")
    board = response.context["board"]
    assert board.summarised and board.selections == 3
    page = response.content.decode()
    assert "Numbers come from the hourly summary" in page
    assert "not the audit record" in page
