"""When no tool fits, /select answers ``tools: []`` with ``no_tool`` {reason,
best_score, threshold}; an answer with tools has ``no_tool: null``; the MCP
search says the same."""

from __future__ import annotations

import uuid

import pytest

from catalog.services.catalogs import ensure_default_catalog
from gateway.refusals import Attempt
from gateway.services import _search
from selection.services.settings import update_selection_settings
from tests.factories import make_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def gated(db):
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather", description="Current weather for a city.")
    update_selection_settings(catalog, {"no_tool_threshold": 0.99}, actor=None)
    return catalog


def test_select_says_no_tool_fits_with_the_score_and_threshold(gated, as_user, curator):
    response = as_user(curator).post(
        "/api/v1/select", {"query": "weather in Paris"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["tools"] == []
    assert body["no_tool"]["reason"] == "below_no_tool_threshold"
    assert body["no_tool"]["threshold"] == 0.99
    assert 0 < body["no_tool"]["best_score"] < 0.99


def test_an_answer_with_tools_has_no_no_tool(db, as_user, curator):
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather", description="Current weather for a city.")
    body = (
        as_user(curator)
        .post("/api/v1/select", {"query": "weather in Paris"}, format="json")
        .json()
    )
    assert body["tools"][0]["name"] == "get_weather"
    assert body["no_tool"] is None


def test_the_openai_format_answer_carries_no_tool_too(gated, as_user, curator):
    body = (
        as_user(curator)
        .post(
            "/api/v1/select",
            {"query": "weather in Paris", "format": "openai"},
            format="json",
        )
        .json()
    )
    assert body["tools"] == [] and body["no_tool"]["threshold"] == 0.99


def test_the_mcp_search_says_no_tool_fits(gated, curator):
    found = _search(  # the MCP search, without its connection handling
        Attempt(curator, uuid.uuid4()),
        {"query": "weather in Paris", "catalog": "default"},
    )
    assert found["tools"] == []
    assert found["no_tool"]["reason"] == "below_no_tool_threshold"
