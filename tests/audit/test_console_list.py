"""/audit/: the compliance console's list, its filters as htmx partials, who may
open it, and the Audit entry in the navigation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from config.params import DAY_RULE
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def lines(response) -> list[str]:
    return [row["line"] for row in response.context["rows"]]


def test_a_compliance_person_sees_the_audit_entry_in_the_navigation(as_compliance):
    page = as_compliance.get("/tools/").content.decode()
    assert 'href="/audit/"' in page


def test_a_curator_has_no_audit_entry_and_is_refused_with_the_styled_403(
    as_curator,
):
    assert 'href="/audit/"' not in as_curator.get("/tools/").content.decode()
    refused = as_curator.get("/audit/")
    assert refused.status_code == 403
    assert 'data-testid="error-page"' in refused.content.decode()


def test_an_admin_may_open_the_console(client, admin_user):
    client.force_login(admin_user)
    assert client.get("/audit/").status_code == 200


def test_someone_signed_out_is_sent_to_sign_in(client):
    response = client.get("/audit/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_list_shows_events_newest_first_each_in_one_line(as_compliance, trail):
    response = as_compliance.get("/audit/")
    shown = [row["event"].pk for row in response.context["rows"]]
    assert shown == sorted(shown, reverse=True)
    assert len(shown) == AuditEvent.objects.count()
    refund_line = next(
        row["line"]
        for row in response.context["rows"]
        if row["event"].pk == trail.refund.pk
    )
    picked = len(trail.refund.output["tools"])
    assert refund_line.startswith(f"agent support-bot: {picked} tool")
    assert "‘refund the card payment’" in refund_line


def test_an_htmx_filter_gets_only_the_results_partial(as_compliance, trail):
    response = as_compliance.get(
        "/audit/?event_type=validation", HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="audit-results"')
    assert "<html" not in body
    assert [row["event"].pk for row in response.context["rows"]] == [
        trail.validation.pk
    ]


def test_the_tool_filter_finds_the_selections_that_offered_it(as_compliance, trail):
    picked = trail.refund.output["tools"][0]["name"]
    response = as_compliance.get(f"/audit/?tool={picked}")
    found = {row["event"].pk for row in response.context["rows"]}
    assert trail.refund.pk in found
    assert all(
        any(t["name"] == picked for t in row["event"].output["tools"])
        for row in response.context["rows"]
    )


def test_the_excluded_tool_and_reason_filters_read_the_exclusion_account(
    as_compliance, trail
):
    left_out = trail.refund.output["excluded"][0]
    by_tool = as_compliance.get(f"/audit/?excluded_tool={left_out['name']}")
    assert trail.refund.pk in {r["event"].pk for r in by_tool.context["rows"]}
    by_reason = as_compliance.get(f"/audit/?reason={left_out['reason']}")
    assert trail.refund.pk in {r["event"].pk for r in by_reason.context["rows"]}
    nobody = as_compliance.get("/audit/?reason=no_such_reason")
    assert nobody.context["rows"] == []
    assert "No events match these filters." in nobody.content.decode()


def test_no_tool_answers_and_invalid_calls_have_their_own_filters(as_compliance, trail):
    empty = as_compliance.get("/audit/?no_tools=on").context["rows"]
    assert [r["event"].pk for r in empty] == [trail.nothing.pk]
    invalid = as_compliance.get("/audit/?invalid_calls=on").context["rows"]
    assert [r["event"].pk for r in invalid] == [trail.validation.pk]


def test_dates_actor_text_and_flags_narrow_the_list(as_compliance, trail):
    today = timezone.localdate()
    tomorrow = today + timedelta(days=1)
    everything = AuditEvent.objects.count()  # the trail, its tools' changes too
    assert (
        len(as_compliance.get(f"/audit/?since={today}").context["rows"]) == everything
    )
    assert as_compliance.get(f"/audit/?since={tomorrow}").context["rows"] == []
    assert (
        as_compliance.get(f"/audit/?until={today - timedelta(days=1)}").context["rows"]
        == []
    )
    by_actor = as_compliance.get("/audit/?actor=SUPPORT").context["rows"]
    assert len(by_actor) == 4
    by_text = as_compliance.get("/audit/?q=weather in").context["rows"]
    assert [r["event"].pk for r in by_text] == [trail.weather.pk]
    not_cached = as_compliance.get("/audit/?cached=no").context["rows"]
    assert len(not_cached) == 3
    assert as_compliance.get("/audit/?degraded=yes").context["rows"] == []


def test_a_bad_date_is_named_and_not_applied(as_compliance, trail):
    response = as_compliance.get("/audit/?since=yesterday")
    assert f"since: {DAY_RULE}" in response.content.decode()
    assert len(response.context["rows"]) == AuditEvent.objects.count()


def test_a_reader_limited_to_one_catalog_sees_only_its_events(client, trail):
    from catalog.services import create_catalog
    from identity.models import UserCatalogAccess

    create_catalog("other", "Other", actor=None)
    reader = make_user("rita", groups=("compliance",))
    UserCatalogAccess.objects.create(user=reader, catalogs=["other"])
    client.force_login(reader)
    response = client.get("/audit/")
    assert {r["event"].catalog_slug for r in response.context["rows"]} == {"other"}


def test_the_empty_state_says_nothing_is_recorded_yet(as_compliance, compliance):
    from identity.models import UserCatalogAccess

    # Making the reader is itself an event (access_changed, of no catalog); one
    # limited to a catalog where nothing happened yet sees the empty state.
    UserCatalogAccess.objects.create(user=compliance, catalogs=["quiet"])
    assert not AuditEvent.objects.filter(catalog_slug="quiet").exists()
    response = as_compliance.get("/audit/")
    assert response.context["rows"] == []
    assert "Nothing recorded yet." in response.content.decode()


def test_past_the_count_cap_the_list_says_more_than(as_compliance, trail, monkeypatch):
    from compliance import paging, views

    monkeypatch.setattr(paging, "COUNT_CAP", 2)
    monkeypatch.setattr(views, "PAGE_SIZE", 1)
    response = as_compliance.get("/audit/")
    assert "More than 2 events" in response.content.decode()
    assert response.context["rows"][0]["event"].pk == trail.validation.pk


def test_a_list_past_its_time_limit_is_stopped_and_says_to_narrow_the_filters(
    as_compliance, trail, slow_audit_count
):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        before = cursor.fetchone()[0]
    response = as_compliance.get("/audit/?actor=agent")
    assert response.status_code == 200
    assert response.context["rows"] == []
    page = response.content.decode()
    assert "This search was stopped:" in page
    assert "narrow them" in page
    assert "Not counted" in page
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == before


def test_a_list_within_its_time_limit_leaves_the_statement_timeout_as_it_was(
    as_compliance, trail
):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        before = cursor.fetchone()[0]
    assert as_compliance.get("/audit/").context["rows"] != []
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == before


def _count_queries(client, url: str) -> list[str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in queries if q["sql"].startswith("SELECT COUNT(*)")]


def test_the_capped_count_does_not_sort_the_matches(as_compliance, trail, monkeypatch):
    from compliance import views

    monkeypatch.setattr(views, "PAGE_SIZE", 1)
    counts = _count_queries(as_compliance, "/audit/")
    assert len(counts) == 1
    assert "LIMIT 1001" in counts[0]
    assert "ORDER BY" not in counts[0]


def test_a_list_that_fits_on_its_first_page_is_counted_without_a_count_query(
    as_compliance, trail
):
    assert _count_queries(as_compliance, "/audit/") == []
    response = as_compliance.get("/audit/")
    total = AuditEvent.objects.count()
    assert len(response.context["rows"]) == total
    assert f"{total} events" in response.content.decode()


def test_past_the_count_cap_each_next_page_still_leads_to_every_event(
    as_compliance, trail, monkeypatch
):
    from compliance import paging, views

    monkeypatch.setattr(paging, "COUNT_CAP", 1)
    monkeypatch.setattr(views, "PAGE_SIZE", 1)
    seen, number = [], 1
    while True:
        response = as_compliance.get(f"/audit/?page={number}")
        page = response.context["page"]
        assert page.number == number
        seen += [row["event"].pk for row in response.context["rows"]]
        if not page.has_next():
            break
        number += 1
    assert seen == list(AuditEvent.objects.order_by("-id").values_list("pk", flat=True))
    assert len(seen) >= 3
    assert f"{len(seen)} events" in response.content.decode()
