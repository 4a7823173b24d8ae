"""A source's tools under pinning: a changed definition waits for review in one
review however often it is listed, a newer one replaces it, the pinned one
listed again withdraws it; the catalog's policy decides whether a risky change
suspends the tool and whether new tools wait."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from catalog.choices import ToolStatus
from catalog.models import Tool, ToolReview
from selection.services.settings import update_trust_policy
from tests.sources.conftest import sync
from tests.upstream import upstream_tool

pytestmark = pytest.mark.django_db
FORECAST = "weather__get_forecast"


def describe(upstream: Any, name: str, text: str) -> None:
    upstream.tools[name] = upstream.tools[name].model_copy(update={"description": text})


def widen_forecast(upstream: Any) -> None:
    old = upstream.tools["get_forecast"]
    schema = {**old.input_schema, "required": []}
    upstream.tools["get_forecast"] = old.model_copy(update={"input_schema": schema})


def pending(name: str = FORECAST) -> list[ToolReview]:
    return list(ToolReview.objects.filter(tool_name=name, state="pending"))


def test_the_same_change_listed_again_waits_in_the_same_review(upstream, make_source):
    source = make_source(upstream.url)
    sync(source)
    describe(upstream, "get_forecast", "Forecast, v2.")
    sync(source)
    [review] = pending()
    events = AuditEvent.objects.count()
    job = sync(source)
    assert pending() == [review]
    assert AuditEvent.objects.count() == events
    [item] = [i for i in job.items if i["name"] == FORECAST]
    assert item["outcome"] == "held" and f"review {review.pk}" in item["reason"]


def test_a_newer_change_replaces_the_waiting_one(upstream, make_source):
    source = make_source(upstream.url)
    sync(source)
    describe(upstream, "get_forecast", "Forecast, v2.")
    sync(source)
    [first] = pending()
    describe(upstream, "get_forecast", "Forecast, v3.")
    sync(source)
    [second] = pending()
    first.refresh_from_db()
    assert (
        first.state == "withdrawn" and second.proposed["description"] == "Forecast, v3."
    )


def test_a_risky_change_suspends_the_tool_until_the_pinned_one_is_listed_again(
    upstream, make_source
):
    source = make_source(upstream.url)
    sync(source)
    pinned = upstream.tools["get_forecast"]
    widen_forecast(upstream)
    sync(source)
    [review] = pending()
    assert review.suspended and "inputSchema/: no longer required: city" in review.risks
    assert Tool.objects.get(name=FORECAST).status == ToolStatus.HELD
    upstream.tools["get_forecast"] = pinned
    sync(source)
    review.refresh_from_db()
    assert review.state == "withdrawn"
    assert Tool.objects.get(name=FORECAST).status == ToolStatus.ACTIVE


def test_a_catalog_may_keep_the_pinned_definition_on_a_risky_change(
    upstream, make_source, catalog, admin_user
):
    update_trust_policy(catalog, {"risky_change": "keep-pinned"}, actor=admin_user)
    source = make_source(upstream.url)
    sync(source)
    widen_forecast(upstream)
    sync(source)
    [review] = pending()
    assert not review.suspended and review.risks
    assert Tool.objects.get(name=FORECAST).status == ToolStatus.ACTIVE
    event = AuditEvent.objects.filter(event_type="settings").latest("id")
    assert event.input["after"]["trust"]["risky_change"] == "keep-pinned"


def test_new_tools_wait_after_the_first_sync_when_the_catalog_asks(
    upstream, make_source, catalog, admin_user
):
    update_trust_policy(
        catalog, {"review_new_tools": "after-first-sync"}, actor=admin_user
    )
    source = make_source(upstream.url)
    first = sync(source)
    assert first.counts["created"] == 7 and not pending("weather__late")
    upstream.tools["late"] = upstream_tool(
        "late", "A tool added later.", read_only=True
    )
    job = sync(source)
    [item] = [i for i in job.items if i["name"] == "weather__late"]
    assert item["outcome"] == "held" and "new" in item["reason"]
    [review] = pending("weather__late")
    assert review.kind == "new" and review.origin == "source:weather"
    assert Tool.objects.get(name="weather__late").status == ToolStatus.HELD
    describe(upstream, "late", "A tool added later, reworded.")
    sync(source)  # not yet accepted: kept current, still waiting
    review.refresh_from_db()
    assert review.proposed["description"] == "A tool added later, reworded."
    assert Tool.objects.get(name="weather__late").status == ToolStatus.HELD


def test_a_change_of_nothing_an_agent_reads_is_written_without_review(
    upstream, make_source
):
    source = make_source(upstream.url)
    sync(source)
    old = upstream.tools["get_forecast"]
    upstream.tools["get_forecast"] = old.model_copy(update={"meta": {"build": "42"}})
    job = sync(source)
    assert not pending()
    link = Tool.objects.get(name=FORECAST).source_link
    assert link.upstream["_meta"] == {"build": "42"}
    assert [i["outcome"] for i in job.items if i["name"] == FORECAST] == ["unchanged"]
