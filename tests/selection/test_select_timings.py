"""stats.timings_ms: where the time of one /select answer went."""

from __future__ import annotations

import pytest

from selection.services.timings import STAGES
from tests.factories import make_sample_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(with_key, db):
    make_sample_catalog()
    return with_key("agent", roles=["support"])


def select(client, query):
    response = client.post("/api/v1/select", {"query": query}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_an_answer_names_the_time_of_every_stage(agent):
    stats = select(agent, "what's the weather in Paris?")["stats"]
    timings = stats["timings_ms"]
    assert set(timings) == set(STAGES)
    assert all(value >= 0 for value in timings.values())
    assert timings["auth"] > 0
    assert timings["engine"] > 0 and timings["snapshot"] > 0
    assert timings["embed_query"] > 0 and timings["audit"] > 0
    parts = sum(value for name, value in timings.items() if name != "total")
    assert timings["total"] >= parts * 0.99
    assert timings["total"] >= stats["latency_ms"]


def test_a_cached_answer_reports_its_own_fresh_timings(agent):
    first = select(agent, "send an email to Bob")
    again = select(agent, "send an email to Bob")
    assert again["cached"] is True
    timings = again["stats"]["timings_ms"]
    # Nothing was scored again: only the snapshot lookup and the audit write.
    assert timings["engine"] == timings["embed_query"] == 0.0
    assert timings["vector_search"] == timings["definitions"] == 0.0
    assert timings["audit"] > 0
    assert timings != first["stats"]["timings_ms"]
