"""GET /api/v1/audit/ takes the console's filters; an unknown or bad one is a 400
naming it, never silently ignored."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_an_unknown_filter_is_a_400_naming_it(with_key):
    response = with_key("compliance").get("/api/v1/audit/?actor=x&colour=red")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid"
    assert list(body["fields"]) == ["colour"]
    assert body["detail"] == "colour: not a filter of the audit log"


def test_a_bad_value_is_a_400_naming_the_filter(with_key):
    response = with_key("compliance").get("/api/v1/audit/?since=last-week")
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["since"]


def test_the_api_filters_like_the_console(with_key, trail):
    api = with_key("compliance")
    picked = trail.refund.output["tools"][0]["name"]
    assert trail.refund.pk in ids(api.get(f"/api/v1/audit/?tool={picked}"))
    assert ids(api.get("/api/v1/audit/?no_tools=true")) == [trail.nothing.pk]
    assert ids(api.get("/api/v1/audit/?invalid_calls=true")) == [trail.validation.pk]
    assert len(ids(api.get("/api/v1/audit/?actor=support-bot"))) == 4
    assert ids(api.get("/api/v1/audit/?q=weather in")) == [trail.weather.pk]


def test_paging_still_works_and_the_old_filters_still_apply(with_key, trail):
    api = with_key("compliance")
    rows = ids(api.get(f"/api/v1/audit/?page=1&request_id={trail.weather.request_id}"))
    assert rows == [trail.weather.pk]
    selection = f"/api/v1/audit/?selection_id={trail.nothing.selection_id}"
    assert ids(api.get(selection)) == [trail.nothing.pk]


def test_the_list_counts_up_to_the_cap_and_says_when_there_are_more(
    with_key, trail, monkeypatch
):
    from audit.models import AuditEvent
    from compliance import paging

    api = with_key("compliance")
    exact = api.get("/api/v1/audit/").json()
    assert (exact["count"], exact["count_capped"]) == (
        AuditEvent.objects.count(),
        False,
    )
    monkeypatch.setattr(paging, "COUNT_CAP", 2)
    monkeypatch.setattr(paging.CappedPagination, "page_size", 1)
    capped = api.get("/api/v1/audit/").json()
    assert (capped["count"], capped["count_capped"]) == (3, True)


def test_a_list_past_its_time_limit_is_a_503_saying_to_narrow_the_filters(
    with_key, trail, slow_audit_count
):
    response = with_key("compliance").get("/api/v1/audit/?actor=agent")
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "too_slow"
    assert "narrow them" in body["detail"]
    assert body["retryable"] is False and "Retry-After" not in response


def test_a_page_past_the_count_cap_is_served_and_counted_up_to_its_end(
    with_key, trail, monkeypatch
):
    from compliance import paging

    monkeypatch.setattr(paging.CappedPagination, "page_size", 1)
    monkeypatch.setattr(paging, "COUNT_CAP", 1)
    api = with_key("compliance")
    first, second = api.get("/api/v1/audit/").json(), api.get("/api/v1/audit/?page=2")
    assert (first["count"], first["count_capped"]) == (2, True)
    assert second.status_code == 200, second.content
    assert (second.json()["count"], second.json()["count_capped"]) == (3, True)
    assert second.json()["next"] is not None
