"""/audit/dashboard/: selections per hour or day, the most picked and excluded tools,
the exclusion rules, no-tool and degraded answers, tool-call flags and the served
latency's p50/p95, aggregated by Postgres for the events the reader may audit."""

from __future__ import annotations

import statistics
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from compliance.charts import column_chart, nice_ceiling
from compliance.dashboard import Window, build_dashboard, preset_window
from config.params import DAY_RULE
from tests.factories import make_client_key, make_user

pytestmark = pytest.mark.django_db
NOW = timezone.make_aware(datetime(2026, 11, 20, 15, 30))


def selection(
    when: datetime,
    picks: tuple[str, ...] = (),
    excluded: tuple[tuple[str, str], ...] = (),
    *,
    latency: float | None = None,
    degraded: bool = False,
    catalog: str = "default",
) -> AuditEvent:
    """A selection row shaped as the select service records it, at ``when``
    (record_event always stamps "now"; these rows need chosen times)."""
    output: dict[str, Any] = {
        "tools": [{"name": name} for name in picks],
        "excluded": [
            {"name": name, "stage": "policy", "reason": reason}
            for name, reason in excluded
        ],
        "degraded": degraded,
        "cached": False,
        "stats": {} if latency is None else {"latency_ms": latency},
    }
    return AuditEvent.objects.create(
        event_type="selection",
        actor_name="api:bot",
        request_id=uuid.uuid4(),
        selection_id=uuid.uuid4(),
        catalog_slug=catalog,
        summary="crafted",
        input={"request": {"query": "q"}},
        output=output,
        created=when,
    )


def everything() -> Any:
    return AuditEvent.objects.all()


def test_over_24_hours_selections_are_counted_per_hour_with_empty_hours_zero():
    selection(NOW - timedelta(minutes=10))  # 15:20
    selection(NOW - timedelta(minutes=25))  # 15:05
    selection(NOW - timedelta(hours=3))  # 12:30
    selection(NOW - timedelta(hours=30))  # outside the last 24 hours
    board = build_dashboard(everything(), preset_window("24h", NOW))
    counts = {b.label: b.count for b in board.buckets}
    assert len(board.buckets) == 24
    assert counts["2026-11-20 15:00"] == 2
    assert counts["2026-11-20 12:00"] == 1
    assert counts["2026-11-20 13:00"] == 0
    assert sum(counts.values()) == board.selections == 3


def test_over_7_days_selections_are_counted_per_calendar_day():
    selection(NOW)
    selection(NOW - timedelta(days=2))
    selection(NOW - timedelta(days=2, hours=5))
    selection(NOW - timedelta(days=7))  # the 13th: before the 7 days
    board = build_dashboard(everything(), preset_window("7d", NOW))
    assert [b.label for b in board.buckets][0] == "2026-11-14"
    assert [(b.label, b.count) for b in board.buckets if b.count] == [
        ("2026-11-18", 2),
        ("2026-11-20", 1),
    ]
    assert board.selections == 3


def test_two_chosen_days_are_drawn_per_hour_and_three_per_day():
    start = timezone.make_aware(datetime(2026, 11, 1))
    assert Window(start, start + timedelta(days=2)).hourly
    assert not Window(start, start + timedelta(days=3)).hourly


def test_the_most_picked_and_excluded_tools_and_the_rules_are_counted():
    selection(NOW, ("refund", "lookup"), (("wipe", "unsafe"), ("weather", "role")))
    selection(NOW, ("refund",), (("wipe", "unsafe"),))
    selection(NOW, ("lookup", "refund"), (("wipe", "blocked"),))
    board = build_dashboard(everything(), preset_window("24h", NOW))
    assert [(c.label, c.count) for c in board.picked] == [
        ("refund", 3),
        ("lookup", 2),
    ]
    assert [(c.label, c.count) for c in board.excluded] == [
        ("wipe", 3),
        ("weather", 1),
    ]
    assert [(c.label, c.count) for c in board.reasons] == [
        ("unsafe", 2),
        ("blocked", 1),
        ("role", 1),
    ]


def test_only_the_top_ten_tools_are_listed():
    for index in range(12):
        selection(NOW, tuple(f"tool_{i:02}" for i in range(index + 1)))
    board = build_dashboard(everything(), preset_window("24h", NOW))
    assert len(board.picked) == 10
    assert board.picked[0].label == "tool_00" and board.picked[0].count == 12
    assert board.picked[-1].label == "tool_09" and board.picked[-1].count == 3


def test_latency_p50_and_p95_are_percentiles_of_the_served_latency():
    latencies = [float(ms) for ms in range(1, 101)]
    for ms in latencies:
        selection(NOW, ("refund",), latency=ms)
    selection(NOW, ("refund",))  # an old record without its latency is skipped
    board = build_dashboard(everything(), preset_window("24h", NOW))
    cuts = statistics.quantiles(latencies, n=20, method="inclusive")
    assert board.latency_p50 == pytest.approx(statistics.median(latencies))
    assert board.latency_p95 == pytest.approx(cuts[18])
    assert board.selections == 101


def test_no_tool_and_degraded_answers_are_counted():
    selection(NOW, ())
    selection(NOW, (), degraded=True)
    selection(NOW, ("refund",))
    board = build_dashboard(everything(), preset_window("24h", NOW))
    assert (board.selections, board.no_tools, board.degraded) == (3, 2, 1)


def test_real_selections_and_tool_call_checks_are_counted(trail, api):
    # A selection belongs to its maker; compliance may link anyone's.
    key = make_client_key("checker", "compliance")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    call = {"type": "tool_use", "id": "c2", "name": "get_weather", "input": {}}
    checked = api.post(
        "/api/v1/tool-calls/validate",
        {
            "output": {"role": "assistant", "content": [call]},
            "selection_id": str(trail.refund.selection_id),
        },
        format="json",
    )
    assert checked.status_code == 200, checked.content
    board = build_dashboard(everything(), preset_window("24h"))
    assert board.selections == 3
    assert board.no_tools == 1  # "zzzz qqqq" matches nothing
    picked = {c.label for c in board.picked}
    assert {t["name"] for t in trail.refund.output["tools"]} <= picked
    # wipe_disk is hidden from the agent (unknown); get_weather is visible but
    # the refund selection blocked it, so it was not offered.
    recorded = [
        c
        for e in everything().filter(event_type="validation")
        for c in e.output["calls"]
    ]
    assert board.checks["events"] == 2
    assert board.checks["calls"] == 2
    assert board.checks["unknown_tool"] == 1
    assert board.checks["not_offered"] == 1
    assert board.checks["invalid_calls"] == sum(not c["valid"] for c in recorded)
    assert board.checks["not_allowed"] == sum(
        "not_allowed" in c["flags"] for c in recorded
    )
    assert board.latency_p50 is not None and board.latency_p50 > 0


def test_the_page_draws_the_charts_with_their_numbers(as_compliance, trail):
    response = as_compliance.get("/audit/dashboard/")
    assert response.status_code == 200
    page = response.content.decode()
    assert response.context["board"].selections == 3
    assert '<svg class="chart"' in page and 'role="img"' in page
    assert '<title id="timeline-svg-title">Selections per day</title>' in page
    assert 'data-testid="timeline-numbers"' in page
    top = response.context["board"].picked[0]
    since = timezone.localdate() - timedelta(days=6)
    link = (
        f"/audit/?tool={top.label}&amp;since={since}&amp;until={timezone.localdate()}"
    )
    assert link in page


def test_a_reason_links_to_the_audit_list_filtered_by_it(as_compliance, trail):
    board = as_compliance.get("/audit/dashboard/?range=24h").context["board"]
    reason = board.reasons[0]
    today = timezone.localdate()
    listed = as_compliance.get(
        f"/audit/?reason={reason.label}&since={today - timedelta(days=1)}&until={today}"
    )
    rows = listed.context["rows"]
    assert rows and all(
        any(x["reason"] == reason.label for x in r["event"].output["excluded"])
        for r in rows
    )


def test_an_htmx_request_gets_only_the_dashboard_partial(as_compliance, trail):
    response = as_compliance.get("/audit/dashboard/?range=30d", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="dashboard"')
    assert "<html" not in body
    assert len(response.context["board"].buckets) == 30


def test_a_range_without_events_shows_the_empty_state(as_compliance):
    response = as_compliance.get("/audit/dashboard/")
    assert response.context["board"].empty
    assert "No selections or tool-call checks in this range." in (
        response.content.decode()
    )
    assert "<svg" not in response.content.decode()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("since=yesterday", f"since: {DAY_RULE}"),
        ("since=2026-11-10&until=2026-11-01", "The last day must not be before"),
        ("since=2026-01-01&until=2026-12-31", "at most 92 days"),
        ("until=2026-11-01", "since: Choose the first day of the range."),
        ("range=1y", "range: Select a valid choice."),
    ],
)
def test_a_bad_range_is_a_form_error_not_a_500(as_compliance, query, message):
    response = as_compliance.get(f"/audit/dashboard/?{query}")
    assert response.status_code == 200
    assert message in response.content.decode()
    assert response.context["board"] is None


def test_chosen_days_count_only_those_days(as_compliance):
    today = timezone.localdate()
    inside = timezone.now().replace(hour=12) - timedelta(days=3)
    selection(inside, ("refund",))
    selection(inside - timedelta(days=5), ("refund",))
    start = (inside - timedelta(days=1)).date()
    response = as_compliance.get(f"/audit/dashboard/?since={start}&until={today}")
    board = response.context["board"]
    assert board.selections == 1
    assert [b.count for b in board.buckets if b.count] == [1]


def test_a_curator_is_refused_and_has_no_dashboard_entry(as_curator):
    assert 'href="/audit/dashboard/"' not in as_curator.get("/tools/").content.decode()
    refused = as_curator.get("/audit/dashboard/")
    assert refused.status_code == 403
    assert 'data-testid="error-page"' in refused.content.decode()


def test_a_compliance_person_finds_the_dashboard_in_the_navigation(as_compliance):
    assert 'href="/audit/dashboard/"' in as_compliance.get("/audit/").content.decode()


def test_a_reader_limited_to_one_catalog_counts_only_its_events(client):
    from catalog.services import create_catalog
    from identity.models import UserCatalogAccess

    create_catalog("other", "Other", actor=None)
    now = timezone.now()
    selection(now, ("theirs",), catalog="other")
    selection(now, ("ours",), catalog="default")
    selection(now, ("ours",), catalog="default")
    reader = make_user("rita", groups=("compliance",))
    UserCatalogAccess.objects.create(user=reader, catalogs=["other"])
    client.force_login(reader)
    board = client.get("/audit/dashboard/").context["board"]
    assert board.selections == 1
    assert [c.label for c in board.picked] == ["theirs"]
    refused = client.get("/audit/dashboard/?catalog=default")
    assert "catalog: Select a valid choice." in refused.content.decode()
    assert refused.context["board"] is None


def test_the_catalog_filter_narrows_an_unlimited_reader(as_compliance):
    now = timezone.now()
    selection(now, ("theirs",), catalog="other")
    selection(now, ("ours",), catalog="default")
    from catalog.services import create_catalog, ensure_default_catalog

    ensure_default_catalog()
    create_catalog("other", "Other", actor=None)
    board = as_compliance.get("/audit/dashboard/?catalog=other").context["board"]
    assert [c.label for c in board.picked] == ["theirs"]


def test_the_column_chart_scales_columns_to_a_round_top():
    start = timezone.make_aware(datetime(2026, 11, 1))
    selection(start + timedelta(hours=1))
    for _ in range(3):
        selection(start + timedelta(hours=2))
    board = build_dashboard(everything(), Window(start, start + timedelta(hours=4)))
    chart = column_chart(board.buckets)
    heights = [c.height for c in chart.columns]
    assert heights[0] == 0 and heights[3] == 0
    assert heights[2] == pytest.approx(3 / 5 * (chart.base - 8))
    assert heights[1] == pytest.approx(heights[2] / 3)
    assert chart.peak is not None and chart.peak.count == 3
    assert [g.value for g in chart.gridlines] == ["0", "2.5", "5"]
    assert [nice_ceiling(n) for n in (0, 1, 3, 7, 11, 250)] == [1, 1, 5, 10, 20, 500]
