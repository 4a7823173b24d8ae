"""A learn on a catalog with labelled "no tool fits" requests fits a no-tool
decision and, once applied, /select (real engine, real database) answers
``tools: []`` with the learnt reason for a request close to those labels, and
the right tool for a request close to a tool's labels; a request with
``min_score`` 0 still gets its ranking. The MCP search answers the same."""

from __future__ import annotations

import uuid

import pytest

from catalog.services.catalogs import ensure_default_catalog
from gateway.refusals import Attempt
from gateway.services import _search
from learning.models import Label, LabelStatus, LearnState
from learning.services import learn
from tests.factories import embed_now, make_tool

pytestmark = pytest.mark.django_db

WEATHER = ["weather in Paris", "is it raining in Rome", "weather tomorrow Oslo",
           "forecast for Lima weather", "weather report Cairo",
           "will it snow in Denver", "temperature in Madrid today"]  # fmt: skip
MONEY = ["convert 20 dollars to euros", "how many yen is 50 pounds",
         "exchange rate dollars to pesos", "convert my francs to dollars",
         "100 euros in rupees", "change 30 pounds into euros"]  # fmt: skip
EMAIL = ["send an email to Bob", "email my boss the report", "write an email to Ann",
         "mail the invoice to Carl", "send a message by email to the team"]  # fmt: skip
# Jokes and poems about what the tools do: the curators marked them "no tool
# fits", though their words are the tools' words (so their scores pass min_score).
CHAT = ["tell me a joke about the weather", "write a poem about rain",
        "tell me a story about money", "a joke about emails",
        "write a poem about euros", "sing a song about snow",
        "tell me a funny story about my inbox", "write a limerick about the sun",
        "a poem about dollars", "tell me a joke about bankers",
        "a riddle about the weather", "write a haiku about winter storms",
        "a song about sending letters",
        "tell me a joke about exchange rates"]  # fmt: skip

POEM = "write a poem about the weather"  # like the jokes and poems, not one of them


@pytest.fixture
def catalog(db):
    found = ensure_default_catalog()
    make_tool(found, "get_weather", description="Current weather for a city.")
    make_tool(found, "convert_currency", description="Convert money amounts.")
    make_tool(found, "send_email", description="Send an email to a person.")
    embed_now(found)  # labels are embedded with the catalog's model
    rows = [(q, ["get_weather"]) for q in WEATHER]
    rows += [(q, ["convert_currency"]) for q in MONEY]
    rows += [(q, ["send_email"]) for q in EMAIL]
    rows += [(q, []) for q in CHAT]
    for query, tools in rows:
        Label.objects.create(
            catalog=found, query=query, tools=tools, status=LabelStatus.ACCEPTED
        )
    return found


def learnt(catalog, actor):
    model = learn.request_learn(catalog, actor=actor, apply=True)
    model = learn.run_learn(learn.claim(model.pk))
    model.refresh_from_db()
    assert model.state == LearnState.SUCCEEDED, model.error
    return model


def test_the_learn_fits_and_applies_a_no_tool_decision(catalog, curator):
    model = learnt(catalog, curator)
    assert model.params["no_tool"]["cut"] <= 1
    report = model.cv["no_tool"]["learnt"]
    assert report["r1_before"] - report["r1_after"] <= 0.015
    assert model.proposed_settings["learnt_model"] == model.pk
    assert model.applied_settings_version == 1


def test_select_answers_no_tool_for_a_request_like_the_no_tool_labels(
    catalog, as_user, curator
):
    learnt(catalog, curator)
    body = (
        as_user(curator).post("/api/v1/select", {"query": POEM}, format="json").json()
    )
    assert body["tools"] == []
    assert body["no_tool"]["reason"] == "learnt_no_tool"
    assert body["no_tool"]["best_score"] >= 0.05  # a tool passed min_score
    assert body["no_tool"]["probability"] >= body["no_tool"]["threshold"]
    attempt = Attempt(curator, uuid.uuid4())  # the MCP search, without its wrapping
    found = _search(attempt, {"query": POEM, "catalog": "default"})
    assert found["tools"] == []  # the MCP search says the same
    assert found["no_tool"]["reason"] == "learnt_no_tool"


def test_select_offers_the_tool_for_a_request_like_its_labels(
    catalog, as_user, curator
):
    learnt(catalog, curator)
    for query, tool in (
        ("weather in Berlin tomorrow", "get_weather"),
        ("convert 75 dollars to yen", "convert_currency"),
    ):
        body = (
            as_user(curator)
            .post("/api/v1/select", {"query": query}, format="json")
            .json()
        )
        assert body["tools"][0]["name"] == tool
        assert body["no_tool"] is None


def test_a_ranking_request_is_never_told_no_tool_fits(catalog, as_user, curator):
    learnt(catalog, curator)
    body = (
        as_user(curator)
        .post(
            "/api/v1/select",
            {"query": POEM, "min_score": 0},
            format="json",
        )
        .json()
    )
    assert body["tools"] and body["no_tool"] is None
