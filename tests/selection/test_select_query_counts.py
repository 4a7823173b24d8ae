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
    # key, catalog, settings version, the audit row (one INSERT: the chain is
    # sealed later, off the request)
    with django_assert_num_queries(4):
        response = agent.post("/api/v1/select", body, format="json")
    assert response.json()["cached"] is True


def test_a_new_selection_costs_a_fixed_number_of_queries(
    agent, django_assert_num_queries
):
    agent.post("/api/v1/select", {"query": "send mail to Bob"}, format="json")
    # The cached answer's four: the semantic pool is scored in process from the
    # snapshot's vectors (no pgvector round trip), and the picks' definitions,
    # versions and hashes come from a per-version cache (the earlier request
    # offered the same tools).
    with django_assert_num_queries(4):
        response = agent.post(
            "/api/v1/select", {"query": "send an email to Dana"}, format="json"
        )
    assert response.json()["cached"] is False
    assert "send_email" in [tool["name"] for tool in response.json()["tools"]]


def test_the_tool_list_costs_the_same_for_one_tool_or_a_page(
    with_key, django_assert_num_queries
):
    curator = with_key("curator")
    make_tool(name="first_tool")
    # key, the mark of its catalogs, their versions, their counts (none kept
    # yet: catalog.counts), page of tools (with catalog and editors), last use
    with django_assert_num_queries(6):
        curator.get("/api/v1/tools/")
    for number in range(60):
        make_tool(name=f"tool_{number:02}")
    # the catalog moved: counted again (its key's last use is not a minute old)
    with django_assert_num_queries(5):
        response = curator.get("/api/v1/tools/")
    assert len(response.json()["results"]) == 50
    # key, the mark (unchanged: the count is kept), page
    with django_assert_num_queries(3):
        response = curator.get("/api/v1/tools/?page=2")
    assert response.json()["count"] == 61
