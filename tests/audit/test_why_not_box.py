"""The selection page's "Why not …?" box answers for any tool of the catalog."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_the_selection_page_offers_the_box_with_the_catalogs_tools(
    as_compliance, trail
):
    page = as_compliance.get(f"/audit/{trail.refund.pk}/").content.decode()
    assert 'id="why-not"' in page
    assert '<option value="wipe_disk">' in page


def test_the_box_says_why_a_blocked_tool_was_left_out(as_compliance, trail):
    answer = as_compliance.get(
        f"/audit/{trail.refund.pk}/why-not/?tool=get_weather",
        headers={"HX-Request": "true"},
    ).content.decode()
    assert "<code>blocked</code>" in answer
    assert "From the selection's own record." in answer


def test_the_box_replays_for_a_tool_the_record_does_not_name(as_compliance, trail):
    answer = as_compliance.get(
        f"/audit/{trail.weather.pk}/why-not/?tool=wipe_disk"
    ).content.decode()
    assert "<code>hidden</code>" in answer
    assert "replaying the selection" in answer


def test_the_box_asks_for_a_tool_name(as_compliance, trail):
    answer = as_compliance.get(f"/audit/{trail.weather.pk}/why-not/").content.decode()
    assert "Name a tool of the catalog." in answer


def test_a_curator_cannot_ask(as_curator, trail):
    response = as_curator.get(f"/audit/{trail.weather.pk}/why-not/?tool=x")
    assert response.status_code == 403
