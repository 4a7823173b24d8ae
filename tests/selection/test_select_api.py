"""POST /api/v1/select and /api/v1/select/batch"""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from tests.factories import make_sample_catalog, make_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(db):
    """A small catalog with real embeddings of the bundled model."""
    return make_sample_catalog()


@pytest.fixture
def agent(with_key, catalog):
    return with_key("agent", roles=["support"])


def select(client, **body):
    return client.post("/api/v1/select", body, format="json")


def names(response):
    return [tool["name"] for tool in response.json()["tools"]]


def test_it_picks_the_relevant_tool_with_a_reason_and_signals(agent):
    response = select(agent, query="what's the weather like in Paris today?")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert names(response)[0] == "get_weather"
    top = body["tools"][0]
    assert 0 < top["score"] <= 1
    assert top["reason"]
    assert top["signals"]
    assert top["definition"]["name"] == "get_weather"
    assert body["stats"]["considered"] == 6
    assert body["cached"] is False


def test_each_scorer_can_be_asked_for_by_name(agent):
    for scorer in ("keyword", "bm25f", "embedding", "hybrid", "ensemble"):
        response = select(agent, query="send an email to Bob", scorer=scorer)
        assert response.status_code == 200, (scorer, response.json())
        assert response.json()["scorer"] == scorer
        assert names(response)[:1] == ["send_email"], (scorer, response.json())


def test_the_llm_scorer_without_an_endpoint_falls_back_to_keywords(agent):
    response = select(agent, query="send an email to Bob", scorer="llm")
    assert response.status_code == 200
    assert names(response)[0] == "send_email"
    assert response.json()["fallback_reason"]


def test_an_unsafe_tool_is_excluded_unless_the_request_allows_it(with_key, catalog):
    trusted = with_key("agent", name="ops-bot", allow_unsafe=True)
    hidden = select(trusted, query="delete the repository", explain=True).json()
    assert "delete_repository" not in [t["name"] for t in hidden["tools"]]
    reasons = {e["name"]: e["reason"] for e in hidden["excluded"]}
    assert reasons["delete_repository"] == "unsafe"
    shown = select(trusted, query="delete the repository", allow_unsafe=True)
    assert "delete_repository" in names(shown)


def test_a_role_restricted_tool_needs_the_callers_role(agent, with_key):
    response = select(agent, query="refund the payment", explain=True)
    assert "refund_payment" not in names(response)
    finance = with_key("agent", name="finance-agent", roles=["finance"])
    assert "refund_payment" in names(select(finance, query="refund the payment"))


def test_roles_may_only_narrow_the_callers_roles(agent):
    response = select(agent, query="refund", roles=["finance"])
    assert response.status_code == 403
    assert "roles" in response.json()["detail"]


def test_block_and_allow_lists_and_capabilities_apply(agent):
    blocked = select(agent, query="weather in Paris", block_tools=["get_weather"])
    assert "get_weather" not in names(blocked)
    only = select(
        agent, query="weather in Paris", allow_tools=["send_email"], min_score=0
    )
    assert set(names(only)) <= {"send_email"}
    streaming = select(
        agent, query="logs", require_capabilities=["streaming"], min_score=0
    )
    assert set(names(streaming)) <= {"tail_logs"}


def test_an_unrelated_request_may_get_no_tool(agent):
    response = select(agent, query="zxqv blorf", scorer="keyword")
    assert response.status_code == 200
    assert response.json()["tools"] == []


def test_the_same_request_gives_the_same_answer_and_is_cached(agent):
    first = select(agent, query="send an email to Bob").json()
    second = select(agent, query="send an email to Bob").json()
    assert second["cached"] is True
    assert first["tools"] == second["tools"]
    assert first["selection_id"] != second["selection_id"]


def test_definitions_come_in_the_asked_format(agent):
    body = select(agent, query="send an email", format="anthropic").json()
    assert "input_schema" in body["tools"][0]["definition"]
    body = select(agent, query="send an email", format="openai").json()
    assert body["tools"][0]["definition"]["type"] == "function"


def test_an_edited_tool_is_offered_with_its_new_definition(agent, catalog):
    from catalog.models import Tool
    from catalog.services.tools import tool_to_spec, update_tool

    def definition():
        body = select(agent, query="send an email", format="openai").json()
        picked = {t["name"]: t["definition"] for t in body["tools"]}
        return picked["send_email"]["function"]["description"]

    assert definition() != "Mail someone."
    tool = Tool.objects.get(catalog=catalog, name="send_email")
    spec = tool_to_spec(tool)
    spec.description = "Mail someone."
    update_tool(tool, spec, actor=None)
    assert definition() == "Mail someone."


def test_every_answer_writes_one_audit_row(agent):
    before = AuditEvent.objects.count()
    select(agent, query="weather")
    select(agent, query="weather")
    assert AuditEvent.objects.count() == before + 2
    assert AuditEvent.objects.first().event_type == "selection"


def test_a_timeout_of_zero_returns_a_degraded_answer(agent):
    response = select(agent, query="weather in Paris", timeout_ms=0, min_score=0)
    assert response.status_code == 200
    assert response.json()["degraded"] is True


def test_a_conversation_counts_the_latest_user_turn_most(agent):
    messages = [
        {"role": "user", "content": "what's the weather in Paris?"},
        {"role": "assistant", "content": "Sunny, 21C."},
        {"role": "user", "content": "great, email that to Bob"},
    ]
    response = select(agent, messages=messages)
    assert response.status_code == 200, response.json()
    assert names(response)[0] == "send_email"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "x", "catalog": "nope"}, "catalog"),
        ({"query": "x", "scorer": "magic"}, "scorer"),
        ({"query": "x", "max_candidates": 0}, "max_candidates"),
        ({"query": "x", "max_candidates": 129}, "max_candidates"),
        ({"query": "x", "min_score": 1.5}, "min_score"),
        ({"query": "x", "timeout_ms": -1}, "timeout_ms"),
        ({"query": "x", "format": "xml"}, "format"),
        ({}, "query"),
        ({"query": "x", "messages": [{"role": "user", "content": "y"}]}, "query"),
        ({"query": 42}, "query"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field(agent, body, field):
    response = select(agent, **body)
    assert 400 <= response.status_code < 500
    assert field in response.json()["detail"] or field in response.json().get(
        "fields", {}
    )


def test_a_batch_answers_in_order_with_errors_in_place(agent):
    response = agent.post(
        "/api/v1/select/batch",
        {
            "requests": [
                {"query": "weather"},
                {"query": "x", "scorer": "magic"},
                {"query": "send email"},
            ]
        },
        format="json",
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert results[0]["tools"][0]["name"] == "get_weather"
    assert results[1]["error"] == "invalid"
    assert "scorer" in results[1]["detail"]
    assert results[2]["tools"][0]["name"] == "send_email"


def test_a_batch_over_100_requests_is_refused(agent):
    response = agent.post(
        "/api/v1/select/batch", {"requests": [{"query": "x"}] * 101}, format="json"
    )
    assert response.status_code == 400
    assert "requests" in response.json()["fields"]


def test_a_degraded_answer_is_not_cached(agent):
    select(agent, query="weather in Paris", timeout_ms=0, min_score=0)
    again = select(agent, query="weather in Paris", timeout_ms=0, min_score=0).json()
    assert again["degraded"] is True
    assert again["cached"] is False


def test_a_new_tool_changes_the_catalog_version_and_the_answer(agent, catalog):
    first = select(agent, query="please translate this text").json()
    make_tool(catalog, "translate_text", description="Translate text to a language.")
    second = select(agent, query="please translate this text").json()
    assert second["catalog_version"] == first["catalog_version"] + 1
    assert second["cached"] is False
    assert second["tools"][0]["name"] == "translate_text"


def test_a_tool_whose_embedding_failed_is_still_found_lexically(agent, catalog):
    from catalog.services.embeddings import mark_failed

    tool = make_tool(catalog, "translate_text", description="Translate text.")
    mark_failed([tool.pk], "embedding failed: endpoint down")
    for scorer in ("keyword", "bm25f", "hybrid"):
        response = select(agent, query="translate this text", scorer=scorer)
        assert names(response)[:1] == ["translate_text"], scorer


def test_the_answer_type_and_its_serializer_name_the_same_fields():
    from dataclasses import fields

    from selection.answers import AnsweredTool, SelectionAnswer
    from selection.api.serializers import PickSerializer, SelectOutputSerializer

    assert set(SelectOutputSerializer().fields) == {
        f.name for f in fields(SelectionAnswer) if not f.metadata.get("audit_only")
    }
    assert set(PickSerializer().fields) == {f.name for f in fields(AnsweredTool)}


def test_an_answer_names_its_fallback_reason_and_has_excluded_only_with_explain(agent):
    plain = select(agent, query="send an email to Bob", scorer="llm").json()
    assert plain["fallback_reason"]
    assert "excluded" not in plain
    explained = select(agent, query="send an email to Bob", explain=True).json()
    assert isinstance(explained["excluded"], list)
