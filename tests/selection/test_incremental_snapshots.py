"""Snapshots are patched, not rebuilt, after a catalog edit, and the next answer is
exactly what a full rebuild gives; a disabled tool is never offered again."""

from __future__ import annotations

import multiprocessing
from dataclasses import replace

import pytest
from django.db.models import F

from catalog.models import Catalog, Tool
from catalog.services.embeddings import embed_tools
from catalog.services.tools import (
    delete_tool,
    set_tool_status,
    tool_to_spec,
    update_tool,
)
from selection.adapters import snapshots
from selection.adapters.pgvector import query_vector
from selection.adapters.snapshots import get_snapshot, wait_for_rebuilds
from selection.engine.engine import select
from selection.engine.types import SelectionRequest
from tests.factories import make_sample_catalog, make_tool

pytestmark = pytest.mark.django_db

QUERIES = (
    "what's the weather in Paris?",
    "delete the old code repository",
    "email the weekly report",
    "refund a payment and stream the logs",
)


@pytest.fixture
def catalog(db, settings):
    snapshots.clear()
    # A forked index builder that hangs (a lock another thread of this busy test
    # process held at the fork) is replaced by a build in the thread, in seconds.
    settings.QUIVER_SNAPSHOT_INDEX_CHILD_TIMEOUT_S = 5
    return make_sample_catalog()


def outcome(catalog, snapshot, query, scorer):
    """Everything an answer shows, for one snapshot."""
    request = SelectionRequest(
        query=query, allow_unsafe=True, explain=True, scorer=scorer, max_candidates=5
    )
    semantic = None
    if snapshot.vectors is not None:
        vector, _ = query_vector(catalog, query)
        pool = snapshot.vectors.nearest(vector, snapshot.settings.candidate_pool)
        semantic = {snapshot.tools[r].name: s for r, s in pool.items()}
    result = select(snapshot, request, semantic=semantic)
    return (
        [(p.name, p.score, p.signals, p.reason) for p in result.tools],
        [(e.name, e.stage, e.reason, e.score) for e in result.excluded],
        replace(result.stats, elapsed_ms=0.0),
    )


def current(catalog):
    catalog.refresh_from_db()
    return get_snapshot(catalog)[0]


def assert_same_as_a_full_rebuild(catalog, patched):
    snapshots.clear()
    fresh = current(catalog)
    assert [t.name for t in patched.tools] == [t.name for t in fresh.tools]
    for query in QUERIES:
        for scorer in ("bm25f", "hybrid", "ensemble"):
            expected = outcome(catalog, fresh, query, scorer)
            assert outcome(catalog, patched, query, scorer) == expected, query
    snapshots.clear()
    current(catalog)


def tool(catalog, name):
    return Tool.objects.get(catalog=catalog, name=name)


def test_an_edit_a_disable_a_delete_and_a_create_each_match_a_full_rebuild(catalog):
    before = current(catalog)
    spec = tool_to_spec(tool(catalog, "get_weather"))
    spec = replace(spec, description="Weather forecast and rain alerts for a town.")
    update_tool(tool(catalog, "get_weather"), spec, actor=None)
    patched = current(catalog)
    # Patched, not rebuilt: the tools that did not change are the same records.
    assert patched.tools[1] is before.tools[1]
    assert patched.tools[0].description.startswith("Weather forecast")
    assert_same_as_a_full_rebuild(catalog, patched)

    set_tool_status(tool(catalog, "send_email"), "disabled", actor=None)
    assert_same_as_a_full_rebuild(catalog, current(catalog))
    delete_tool(tool(catalog, "tail_logs"), actor=None)
    patched = current(catalog)
    assert "tail_logs" not in {t.name for t in patched.tools}
    assert_same_as_a_full_rebuild(catalog, patched)
    new = make_tool(catalog, "stream_logs", description="Stream a service's logs.")
    assert_same_as_a_full_rebuild(catalog, current(catalog))
    embed_tools([new.pk])  # the new tool's vector lands: read into the snapshot
    patched = current(catalog)
    assert patched.vectors is not None and patched.vectors.present.all()
    assert_same_as_a_full_rebuild(catalog, patched)


@pytest.mark.parametrize("inline_index_max", [1_000, 0])
def test_a_disabled_unsafe_tool_is_never_offered_by_the_next_request(
    catalog, with_key, settings, inline_index_max
):
    settings.QUIVER_SNAPSHOT_INLINE_INDEX_MAX = inline_index_max
    settings.QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY = 3_600  # the patched index serves
    agent = with_key("agent", allow_unsafe=True)
    body = {"query": "delete the old code repository", "allow_unsafe": True}

    def picks():
        response = agent.post("/api/v1/select", body, format="json")
        assert response.status_code == 200, response.json()
        return [t["name"] for t in response.json()["tools"]]

    assert "delete_repository" in picks()
    # An edit first, so a large catalog's index is already a patched one.
    spec = tool_to_spec(tool(catalog, "delete_repository"))
    spec = replace(spec, description=f"{spec.description} Irreversible.")
    update_tool(tool(catalog, "delete_repository"), spec, actor=None)
    assert "delete_repository" in picks()
    set_tool_status(tool(catalog, "delete_repository"), "disabled", actor=None)
    assert "delete_repository" not in picks()
    assert "delete_repository" not in picks()  # and not from the answer cache


def test_a_large_catalog_serves_at_once_and_rebuilds_its_index_in_the_background(
    catalog, settings
):
    settings.QUIVER_SNAPSHOT_INLINE_INDEX_MAX = 0
    settings.QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY = 0
    current(catalog)
    make_tool(catalog, "forecast_rain", description="Rain forecast for a city.")
    delete_tool(tool(catalog, "create_calendar_event"), actor=None)
    set_tool_status(tool(catalog, "get_weather"), "disabled", actor=None)
    patched = current(catalog)
    names = [t.name for t in patched.tools]
    assert "forecast_rain" in names and "create_calendar_event" not in names
    assert patched.index.base is not None  # patched, not yet rebuilt
    for query in QUERIES:
        picked = outcome(catalog, patched, query, "hybrid")[0]
        assert "get_weather" not in {name for name, *_ in picked}
    # The new tool is found by its own words before the rebuild.
    rain = outcome(catalog, patched, "rain forecast for a city", "bm25f")[0]
    assert "forecast_rain" in {name for name, *_ in rain}
    wait_for_rebuilds()
    assert current(catalog).index.base is None
    assert_same_as_a_full_rebuild(catalog, current(catalog))


def test_a_sooner_rebuild_is_not_held_back_by_one_scheduled_for_later(
    catalog, settings
):
    """A rebuild scheduled an hour ahead (its thread asleep), then the cache cleared
    and filled again under the same catalog id: a rebuild due now still runs now."""
    settings.QUIVER_SNAPSHOT_INLINE_INDEX_MAX = 0
    settings.QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY = 3_600
    current(catalog)
    make_tool(catalog, "forecast_rain", description="Rain forecast for a city.")
    assert current(catalog).index.base is not None  # patched; rebuild in an hour
    snapshots.clear()
    current(catalog)
    settings.QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY = 0
    make_tool(catalog, "forecast_snow", description="Snow forecast for a city.")
    assert current(catalog).index.base is not None
    wait_for_rebuilds(timeout=20)
    assert current(catalog).index.base is None


def test_an_index_child_that_sends_nothing_in_time_is_replaced_by_a_build_here(
    catalog, settings
):
    settings.QUIVER_SNAPSHOT_INLINE_INDEX_MAX = 0
    settings.QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY = 0
    settings.QUIVER_SNAPSHOT_INDEX_CHILD_TIMEOUT_S = 0  # no child answers that fast
    current(catalog)
    make_tool(catalog, "forecast_rain", description="Rain forecast for a city.")
    assert current(catalog).index.base is not None
    wait_for_rebuilds(timeout=20)
    assert current(catalog).index.base is None
    assert not multiprocessing.active_children()  # the child was killed and reaped
    assert_same_as_a_full_rebuild(catalog, current(catalog))


def test_a_change_the_feed_missed_makes_a_full_rebuild_not_a_stale_tool(catalog):
    current(catalog)
    # A write that left no change record (not through the services).
    Tool.objects.filter(catalog=catalog, name="get_weather").update(
        status="disabled", version=F("version") + 1
    )
    Catalog.objects.filter(pk=catalog.pk).update(version=F("version") + 1)
    snapshot = current(catalog)
    assert snapshot.tools[snapshot.by_name["get_weather"]].status == "disabled"
    assert_same_as_a_full_rebuild(catalog, snapshot)
