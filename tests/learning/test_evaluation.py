"""Evaluations: the catalog's accepted labels (or inline ones, never stored) run
through the real selection path; the numbers equal an independent computation
by bench/quality.py's method; settings tried are validated like the settings API
and never saved."""

from __future__ import annotations

import pytest

from bench._data import EmbeddingCache, Query, get_embedder, tool_embedding_text
from bench.quality import (
    Prepared,
    embed_text,
    hybrid_text,
    no_tool_check,
    ranked_metrics,
    records_from_specs,
    run_engine,
)
from catalog.models import Tool
from catalog.services.tools import tool_to_spec
from learning.evaluation import LabelledRequest, evaluate
from learning.metrics import mean_metrics
from learning.models import Evaluation, Label
from learning.services.evaluations import run_now
from learning.tasks import run_evaluation
from selection.engine.sentences import split_sentences
from selection.engine.snapshot import CatalogSnapshot
from selection.models import SelectionSettings
from tests.factories import embed_now, make_tool

pytestmark = pytest.mark.django_db

URL = "/api/v1/catalogs/default/evaluations"
TOOLS = {
    "get_weather": "Current weather and temperature for a city.",
    "get_forecast": "Weather forecast for the next days in a city.",
    "send_email": "Send an email message to a recipient.",
    "send_sms": "Send a text message to a phone number.",
    "create_calendar_event": "Create a meeting on the calendar.",
    "list_calendar_events": "List the meetings on a calendar for a day.",
    "refund_payment": "Refund a customer's card payment.",
    "tail_logs": "Stream the logs of a service.",
    "translate_text": "Translate a text into another language.",
    "convert_currency": "Convert an amount of money between currencies.",
    "search_flights": "Search flights between two airports on a date.",
    "book_hotel": "Book a hotel room in a city for some nights.",
}
LABELS = [
    ("Will it rain in Paris tomorrow?", ["get_forecast"]),
    ("How warm is it in Oslo right now?", ["get_weather"]),
    (
        "Mail the report to Dana. Then text her that it is sent.",
        ["send_email", "send_sms"],
    ),
    ("Put a meeting with the design team on Friday", ["create_calendar_event"]),
    ("What is on my calendar today?", ["list_calendar_events"]),
    ("Give the customer their money back", ["refund_payment"]),
    ("Show me what the api service is logging", ["tail_logs"]),
    ("How do you say good morning in Japanese?", ["translate_text"]),
    ("How many yen is 20 euros?", ["convert_currency"]),
    ("Find me a flight from Lisbon to Berlin on May 3", ["search_flights"]),
    ("I need a room in Rome for two nights", ["book_hotel"]),
    ("Weather in Rome and a hotel there", ["get_weather", "book_hotel"]),
    ("Tell me a joke about penguins", []),
    ("Who won the football world cup in 1998?", []),
    ("Write a haiku about autumn leaves", []),
]


@pytest.fixture
def catalog(db):
    for name, description in TOOLS.items():
        make_tool(name=name, description=description)
    return embed_now(Tool.objects.first().catalog)


def labelled() -> list[LabelledRequest]:
    return [LabelledRequest(q, None, tools) for q, tools in LABELS]


def bench_prepared(catalog, tmp_path) -> Prepared:
    """The catalog as bench/quality.py prepares a data set (its own snapshot,
    its own embeddings of the tools and queries)."""
    specs = [
        tool_to_spec(t) for t in Tool.objects.filter(catalog=catalog).order_by("id")
    ]
    queries = [
        Query(str(i), q, tuple(tools), "single_tool" if tools else "no_tool")
        for i, (q, tools) in enumerate(LABELS)
    ]
    cache = EmbeddingCache(get_embedder(), root=tmp_path)
    sentences = [split_sentences(embed_text(q.text)) for q in queries]
    return Prepared(
        name="catalog",
        specs=specs,
        snapshot=CatalogSnapshot("default", "bench", records_from_specs(specs)).warm(),
        queries=queries,
        tool_vecs=cache.get([tool_embedding_text(s) for s in specs]),
        peer_vecs=cache.get([f"{s.name}: {s.description}" for s in specs]),
        query_vecs=cache.get([q.text for q in queries], kind="query"),
        hybrid_vecs=cache.get([hybrid_text(s) for s in specs]),
        sentence_vecs=[
            cache.get(g, kind="query") if g else cache.get([], kind="query")[:0]
            for g in sentences
        ],
    )


def independent(catalog, tmp_path, scorer="hybrid"):
    data = bench_prepared(catalog, tmp_path)
    ranked, _ = run_engine(data, scorer)
    return mean_metrics(ranked_metrics(data, ranked)), no_tool_check(data, ranked)


def test_the_evaluation_equals_the_benchs_own_computation(catalog, tmp_path):
    report = evaluate(catalog, labelled())
    metrics = report["metrics"]
    expected, no_tool = independent(catalog, tmp_path)
    for key, value in expected.items():
        assert metrics[key] == pytest.approx(value, abs=1e-9), key
    assert metrics["no_tool_fp_rate"] == pytest.approx(no_tool["fp"], abs=1e-9)
    assert metrics["no_tool_recall"] == pytest.approx(1 - no_tool["fp"], abs=1e-9)
    assert metrics["with_tools"] == 12
    assert metrics["no_tool_requests"] == 3
    assert 0 < metrics["NDCG@10"] < 1  # a real ranking, neither empty nor perfect


def test_settings_tried_are_used_and_never_saved(catalog, tmp_path):
    tried = evaluate(catalog, labelled(), {"default_scorer": "keyword"})["metrics"]
    expected, _ = independent(catalog, tmp_path, scorer="keyword")
    assert tried["NDCG@10"] == pytest.approx(expected["NDCG@10"], abs=1e-9)
    current = evaluate(catalog, labelled())["metrics"]
    assert tried["NDCG@10"] != current["NDCG@10"]
    assert not SelectionSettings.objects.filter(catalog=catalog).exists()


def test_each_request_names_the_rank_of_each_expected_tool_and_why_not(catalog):
    rows = evaluate(catalog, labelled())["rows"]
    assert len(rows) == len(LABELS)
    two = rows[2]["expected"]
    assert [e["tool"] for e in two] == ["send_email", "send_sms"]
    for row in rows:
        for e in row["expected"]:
            assert e["rank"] is None or 1 <= e["rank"] <= 10
            if e["rank"] is None or e["rank"] > 3:
                assert row["miss"]
                assert e["why_not"]["outcome"] in ("excluded", "picked")
                assert e["why_not"]["source"] == "evaluation"
    assert all("answered" in r for r in rows[-3:])


def test_an_inline_evaluation_is_queued_run_and_its_labels_never_stored(
    as_user, curator, catalog
):
    items = [{"query": q, "tools": t} for q, t in LABELS]
    response = as_user(curator).post(URL, {"labels": items}, format="json")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert (body["state"], body["source"], body["total"]) == ("queued", "inline", 15)
    assert not Label.objects.exists()
    assert run_evaluation(body["id"]) == "succeeded"
    run = Evaluation.objects.get(pk=body["id"])
    assert run.payload is None
    assert not Label.objects.exists()
    detail = as_user(curator).get(f"{URL}/{run.pk}?misses=true").json()
    assert detail["progress"] == 100
    assert detail["metrics"]["NDCG@10"] == pytest.approx(
        evaluate(catalog, labelled())["metrics"]["NDCG@10"], abs=1e-9
    )
    assert detail["rows_count"] == detail["misses"]
    for row in detail["rows"]:
        for e in row["expected"]:
            assert e["why_not_url"].startswith(
                f"/catalogs/default/evaluation/{run.pk}/requests/{row['index']}/#"
            )
            assert (
                as_user(curator).get(e["why_not_url"].split("#")[0]).status_code == 200
            )


def test_the_catalogs_accepted_labels_are_evaluated_not_the_proposals(
    as_user, curator, catalog
):
    Label.objects.create(
        catalog=catalog, query="weather in Oslo", tools=["get_weather"]
    )
    Label.objects.create(
        catalog=catalog, query="flights", tools=["search_flights"], status="proposed"
    )
    response = as_user(curator).post(URL, {}, format="json")
    assert response.json()["total"] == 1
    run = run_now(Evaluation.objects.get(pk=response.json()["id"]))
    assert run.state == "succeeded"
    assert run.metrics["requests"] == 1
    assert run.rows[0]["label_id"] == Label.objects.get(query="weather in Oslo").pk
    listed = as_user(curator).get(URL).json()
    assert listed["count"] == 1
    assert listed["results"][0]["settings_version"] == 0


def test_settings_are_validated_exactly_as_the_settings_api_does(
    as_user, curator, catalog
):
    client = as_user(curator)
    bad = {"default_scorer": "nope", "bm25_k1": "high", "no_such_setting": 1}
    tried = client.post(URL, {"settings": bad}, format="json")
    saved = client.put(
        "/api/v1/catalogs/default/selection-settings", {"settings": bad}, format="json"
    )
    assert tried.status_code == saved.status_code == 400
    assert tried.json()["fields"] == saved.json()["fields"]
    assert not Evaluation.objects.exists()


def test_inline_labels_with_a_bad_item_are_a_400_naming_it(as_user, curator, catalog):
    items = [
        {"query": "weather", "tools": ["get_weather"]},
        {"query": "x", "tools": ["nope"]},
    ]
    response = as_user(curator).post(URL, {"labels": items}, format="json")
    assert response.status_code == 400
    assert "labels[1].tools" in response.json()["fields"]
    assert not Evaluation.objects.exists()


def test_an_unknown_evaluation_is_a_404(as_user, curator, catalog):
    assert as_user(curator).get(f"{URL}/12345").status_code == 404


def test_a_catalog_without_accepted_labels_is_a_400_naming_labels(
    as_user, curator, catalog
):
    Label.objects.create(catalog=catalog, query="x", tools=[], status="proposed")
    response = as_user(curator).post(URL, {}, format="json")
    assert response.status_code == 400
    assert "no accepted labels" in response.json()["fields"]["labels"][0]
    assert not Evaluation.objects.exists()
