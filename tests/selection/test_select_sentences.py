"""A request of several sentences: each sentence is embedded too, so a tool only
its second sentence asks for still reaches the semantic pool (real model)."""

from __future__ import annotations

import numpy as np
import pytest

from audit.models import AuditEvent
from selection.adapters import snapshots
from selection.adapters.pgvector import query_vector, sentence_vectors
from selection.adapters.snapshots import get_snapshot
from selection.services.settings import current_settings, update_selection_settings
from tests.factories import embed_now, ensure_default_catalog, make_tool

pytestmark = pytest.mark.django_db

TOOLS = {
    "get_weather": "Current weather and temperature for a city.",
    "weather_forecast": "Rain, sun and wind forecast for the next days in a place.",
    "book_hotel": "Book a hotel room in a city for given dates.",
    "find_flights": "Search flights between two airports for a trip.",
    "convert_currency": "Convert an amount of money from one currency to another.",
    "send_email": "Send an email message to a recipient.",
    "city_guide": "Sights, museums and restaurants to visit in a city like Paris.",
    "packing_list": "What to pack for a family trip, given the weather there.",
    "weekend_planner": "Plan a weekend away: trips, outings and family activities.",
}
# The first sentence dominates the whole request's vector; only the second asks
# for money, in words the currency tool's description does not use.
LONG = (
    "We are planning a long family weekend trip to Paris and want to know if it "
    "will rain or be sunny there on Saturday and Sunday. How much is 200 dollars?"
)
SHORT = "Will it rain in Paris this weekend?"


@pytest.fixture
def catalog(db):
    catalog = ensure_default_catalog()
    for name, description in TOOLS.items():
        make_tool(catalog, name, description=description)
    settings, _ = current_settings(embed_now(catalog))
    update_selection_settings(catalog, {**settings, "candidate_pool": 3}, actor=None)
    catalog.refresh_from_db()
    snapshots.clear()
    return catalog


def select(client, query, **extra):
    body = {"query": query, "scorer": "hybrid", "explain": True, **extra}
    response = client.post("/api/v1/select", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_tool_named_only_by_the_second_sentence_reaches_the_pool(catalog):
    snapshot, _ = get_snapshot(catalog)
    table = snapshot.vectors
    vector, backend = query_vector(catalog, LONG)
    whole = {snapshot.tools[r].name for r in table.nearest(vector, 3)}
    assert "convert_currency" not in whole
    sentences = sentence_vectors(LONG, backend)
    assert len(sentences) == 2
    mixed = {
        snapshot.tools[r].name: s
        for r, s in table.nearest_mixed(vector, sentences, 3).items()
    }
    assert whole < set(mixed) and "convert_currency" in mixed
    assert mixed["convert_currency"] > mixed["book_hotel"]


def test_the_answer_offers_it_and_times_the_sentences(catalog, with_key):
    # Without the pool it would be no candidate: no word of it is in the request.
    answer = select(with_key("agent"), LONG, max_candidates=len(TOOLS), min_score=0)
    assert "convert_currency" in [t["name"] for t in answer["tools"]]
    assert answer["stats"]["timings_ms"]["embed_sentences"] > 0


def test_a_one_sentence_request_is_scored_as_before(catalog, with_key):
    answer = select(with_key("agent"), SHORT, max_candidates=6, min_score=0)
    assert answer["stats"]["timings_ms"]["embed_sentences"] == 0.0
    snapshot, _ = get_snapshot(catalog)
    vector, backend = query_vector(catalog, SHORT)
    assert len(sentence_vectors(SHORT, backend)) == 0
    alone = snapshot.vectors.nearest(vector, 3)
    assert (
        snapshot.vectors.nearest_mixed(vector, sentence_vectors(SHORT, backend), 3)
        == alone
    )


def test_pgvector_and_in_process_pools_give_the_same_answer(
    catalog, with_key, settings
):
    agent = with_key("agent")
    in_process = select(agent, LONG, max_candidates=6, min_score=0)["tools"]
    settings.QUIVER_INPROCESS_VECTORS_MAX = 0
    snapshots.clear()
    assert get_snapshot(catalog)[0].vectors is None
    from_pgvector = select(agent, LONG + " ", max_candidates=6, min_score=0)["tools"]
    assert [t["name"] for t in from_pgvector] == [t["name"] for t in in_process]
    assert np.allclose(
        [t["score"] for t in from_pgvector], [t["score"] for t in in_process], atol=1e-4
    )


def test_why_not_replays_a_multi_sentence_pick_exactly(catalog, with_key):
    answer = select(
        with_key("agent", name="agent"), LONG, max_candidates=2, min_score=0
    )
    event = AuditEvent.objects.get(selection_id=answer["selection_id"])
    missed = next(
        name for name in TOOLS if name not in [t["name"] for t in answer["tools"]]
    )
    reply = with_key("compliance").get(
        f"/api/v1/audit/{event.pk}/why-not?tool={missed}"
    )
    assert reply.status_code == 200, reply.json()
    body = reply.json()
    assert (body["source"], body["reproduces"], body["missing"]) == ("replay", True, [])
