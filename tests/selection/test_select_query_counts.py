"""The hot paths' query counts are pinned: a new query per request is a regression."""

from __future__ import annotations

import pytest

from tests.factories import make_sample_catalog, make_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(with_key, db):
    make_sample_catalog()
    return with_key("agent", roles=["support"])


def test_a_repeated_selection_costs_a_fixed_number_of_queries(
    agent, django_assert_num_queries
):
    body = {"query": "what's the weather in Paris?"}
    agent.post("/api/v1/select", body, format="json")
    # key, catalog, settings version; the audit row: savepoint, chain lock, chain
    # head, insert, release
    with django_assert_num_queries(8):
        response = agent.post("/api/v1/select", body, format="json")
    assert response.json()["cached"] is True


def test_a_new_selection_costs_a_fixed_number_of_queries(
    agent, django_assert_num_queries
):
    agent.post("/api/v1/select", {"query": "warm the snapshot"}, format="json")
    # The same 8 (no pick here, so no definitions or versions query): the semantic
    # pool is scored in process from the snapshot's vectors, so the pgvector
    # search (savepoint, set ef_search, search, release) is no longer made.
    with django_assert_num_queries(8):
        response = agent.post(
            "/api/v1/select", {"query": "email the report to Dana"}, format="json"
        )
    assert response.json()["cached"] is False


def test_the_tool_list_costs_the_same_for_one_tool_or_a_page(
    with_key, django_assert_num_queries
):
    curator = with_key("curator")
    make_tool(name="first_tool")
    # key, count, page of tools (with catalog and editors), the key's last use
    with django_assert_num_queries(4):
        curator.get("/api/v1/tools/")
    for number in range(60):
        make_tool(name=f"tool_{number:02}")
    with django_assert_num_queries(3):
        response = curator.get("/api/v1/tools/")
    assert len(response.json()["results"]) == 50
