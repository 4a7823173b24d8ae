"""The semantic pool scored in process from the snapshot's vectors equals the exact
pgvector cosine ordering, and answers are the same either way."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from catalog.models import Tool
from catalog.services.tools import delete_tool
from selection.adapters import snapshots
from selection.adapters.pgvector import query_vector
from selection.adapters.snapshots import get_snapshot
from tests.factories import make_sample_catalog, make_tool

pytestmark = pytest.mark.django_db

QUERIES = [
    "what's the weather in Paris?",
    "email the report to Dana",
    "refund the customer's last payment",
    "show me the logs of the api service",
]


@pytest.fixture
def catalog(db):
    catalog = make_sample_catalog()
    make_tool(catalog, "pending_tool", description="Weather alerts, not embedded.")
    catalog.refresh_from_db()
    return catalog


def exact_order(catalog, vector):
    """Every vector of the catalog's model by exact cosine (a sort, no index)."""
    literal = "[" + ",".join(f"{x:.9g}" for x in vector.tolist()) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.name, 1 - (e.embedding <=> %s::vector) FROM "
            "catalog_toolembedding e JOIN catalog_tool t ON t.id = e.tool_id "
            "WHERE e.catalog_id = %s AND e.model_id = %s "
            "ORDER BY e.embedding <=> %s::vector, t.id",
            [literal, catalog.pk, catalog.active_embedding_model, literal],
        )
        return cursor.fetchall()


@pytest.mark.parametrize("query", QUERIES)
def test_the_in_process_pool_is_the_exact_cosine_ordering(catalog, query):
    snapshots.clear()
    snapshot, _ = get_snapshot(catalog)
    assert snapshot.vectors is not None
    vector, _backend = query_vector(catalog, query)
    expected = exact_order(catalog, vector)
    pool = snapshot.vectors.nearest(vector, len(snapshot.tools))
    got = [(snapshot.tools[row].name, score) for row, score in pool.items()]
    assert [name for name, _ in got] == [name for name, _ in expected]
    assert np.allclose([s for _, s in got], [s for _, s in expected], atol=1e-5)
    # A tool without a vector yet has no semantic evidence.
    assert "pending_tool" not in {name for name, _ in got}
    top3 = snapshot.vectors.nearest(vector, 3)
    assert [snapshot.tools[r].name for r in top3] == [n for n, _ in expected[:3]]


def test_answers_are_the_same_in_process_and_from_pgvector(catalog, with_key, settings):
    # Only the in-process table knows a tool has no vector yet (and scores it by
    # its words alone, see hybrid._without_vector): compare embedded tools.
    delete_tool(Tool.objects.get(name="pending_tool"), actor=None)
    agent = with_key("agent", roles=["support"])

    def answers():
        snapshots.clear()
        out = []
        for query in QUERIES:
            body = {"query": query, "explain": True, "scorer": "hybrid"}
            data = agent.post("/api/v1/select", body, format="json").json()
            out.append([(t["name"], t["score"]) for t in data["tools"]])
        return out

    in_process = answers()
    assert get_snapshot(catalog)[0].vectors is not None
    settings.QUIVER_INPROCESS_VECTORS_MAX = 0
    from_pgvector = answers()
    assert get_snapshot(catalog)[0].vectors is None
    assert in_process == from_pgvector
    assert any(in_process)
