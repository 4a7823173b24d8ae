"""GET /api/v1/catalogs/{slug}/confusable: tool pairs the ranking confuses (an
evaluation's misses where the expected tool lost to the same other tool, and
near-duplicate texts), with the requests and the fields to sharpen."""

from __future__ import annotations

import pytest

from catalog.models import Catalog
from learning.confusable import confusable_pairs, overlap, sharpen
from learning.models import Evaluation
from tests.factories import embed_now, make_tool

pytestmark = pytest.mark.django_db

URL = "/api/v1/catalogs/default/confusable"


@pytest.fixture
def catalog(db):
    make_tool(
        name="get_weather",
        description="Get the current weather for a city.",
        examples=["weather in Paris"],
        avoid_when="The user asks about days ahead.",
    )
    make_tool(
        name="current_weather",
        description="Get the current weather for a city.",
        examples=["weather in Paris right now"],
        # Its own parameters: the same text and schema would be a near-copy, held.
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
        },
        avoid_when="The user asks about forecasts.",
    )
    make_tool(name="get_forecast", description="Weather forecast for the next days.")
    make_tool(name="send_email", description="Send an email message to a recipient.")
    return embed_now(Catalog.objects.get(slug="default"))


def row(index, text, expected, top):
    return {"index": index, "text": text, "top": top,
            "expected": [{"tool": t, "rank": None} for t in expected]}  # fmt: skip


def finished(catalog, rows):
    return Evaluation.objects.create(
        catalog=catalog, state="succeeded", rows=rows, metrics={"NDCG@10": 0.5}
    )


def test_misses_where_one_tool_beat_the_expected_one_are_counted_per_pair(catalog):
    finished(
        catalog,
        [
            row(0, "rain tomorrow?", ["get_forecast"], ["get_weather", "get_forecast"]),
            row(1, "weekend weather", ["get_forecast"], ["get_weather"]),
            row(2, "is it sunny", ["get_weather"], ["get_forecast"]),
            row(3, "mail Bo", ["send_email"], ["send_email"]),
            row(4, "no tool", [], ["send_email"]),
        ],
    )
    pairs = confusable_pairs(catalog, threshold=0.999)["pairs"]
    first = pairs[0]
    assert first["tools"] == ["get_forecast", "get_weather"]
    assert first["misses"] == 3
    assert [r["text"] for r in first["requests"]] == [
        "rain tomorrow?", "weekend weather", "is it sunny"
    ]  # fmt: skip
    assert {r["ranked_first"] for r in first["requests"]} == {
        "get_weather",
        "get_forecast",
    }
    assert all("send_email" not in p["tools"] for p in pairs)


def test_near_duplicate_texts_are_a_pair_by_cosine(catalog):
    pairs = confusable_pairs(catalog, threshold=0.9)["pairs"]
    by_tools = {tuple(p["tools"]): p for p in pairs}
    pair = by_tools[("current_weather", "get_weather")]
    assert pair["cosine"] >= 0.9
    assert pair["misses"] == 0
    assert ("get_forecast", "send_email") not in by_tools
    assert ("current_weather", "get_weather") not in {
        tuple(p["tools"]) for p in confusable_pairs(catalog, threshold=0.9999)["pairs"]
    }


def test_empty_fields_are_sharpened_first_else_the_most_similar_one(catalog):
    pairs = confusable_pairs(catalog, threshold=0.5)["pairs"]
    by_tools = {tuple(p["tools"]): p for p in pairs}
    both_full = by_tools[("current_weather", "get_weather")]["sharpen"]
    assert both_full == {
        "current_weather": ["description"],
        "get_weather": ["description"],
    }
    forecast = by_tools[("get_forecast", "get_weather")]["sharpen"]
    assert forecast["get_forecast"] == ["examples", "avoid_when"]


def test_the_rule_picks_the_field_whose_words_overlap_most():
    a = {"description": "alpha beta", "examples": "one two three", "avoid_when": "x"}
    b = {"description": "gamma", "examples": "one two four", "avoid_when": "y"}
    assert sharpen(a, b, "a", "b") == {"a": ["examples"], "b": ["examples"]}
    assert overlap("", "") == 0.0
    assert overlap("A b", "a B") == 1.0


def test_the_api_answers_pairs_and_refuses_a_bad_threshold(as_user, curator, catalog):
    client = as_user(curator)
    body = client.get(URL + "?threshold=0.9").json()
    assert body["threshold"] == 0.9
    assert ["current_weather", "get_weather"] in [p["tools"] for p in body["pairs"]]
    bad = client.get(URL + "?threshold=2")
    assert bad.status_code == 400
    assert "threshold" in bad.json()["fields"]
