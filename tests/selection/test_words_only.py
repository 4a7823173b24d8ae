"""A selection asked before a catalog's tools are embedded is ranked by words alone,
and the answer says so (words_only and why), as the audit row does; once the
vectors are there, the next answer weighs meaning again."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from catalog.models import Catalog
from tests.factories import embed_now, make_tool

pytestmark = pytest.mark.django_db
BODY = {"query": "send an email to Bob"}


@pytest.fixture
def agent(with_key, db):
    make_tool(name="send_email", description="Send an email message to someone.")
    make_tool(name="get_weather", description="Current weather for a city.")
    return with_key("agent")


def select(client, **body):
    response = client.post("/api/v1/select", {**BODY, **body}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_an_answer_before_the_embeddings_says_it_was_ranked_by_words_alone(agent):
    answer = select(agent)

    assert answer["tools"][0]["name"] == "send_email"
    assert answer["words_only"] is True
    assert answer["words_only_reason"].startswith(
        "The catalog's tool embeddings are not ready (2 of 2 tools wait for their "
        "vectors): ranked by words alone (BM25F), not by meaning."
    )
    [row] = AuditEvent.objects.filter(event_type="selection")
    assert row.output["words_only"] is True


def test_once_the_tools_are_embedded_the_same_request_weighs_meaning_again(agent):
    assert select(agent)["words_only"] is True

    embed_now(Catalog.objects.get(slug="default"))
    answer = select(agent)

    assert (answer["words_only"], answer["words_only_reason"]) == (False, "")
    assert answer["cached"] is False  # the words-only answer did not outlive it
    assert answer["tools"][0]["signals"]["embed"] > 0


@pytest.mark.parametrize("scorer", ["bm25f", "keyword"])
def test_a_scorer_of_words_by_choice_is_not_flagged(agent, scorer):
    answer = select(agent, scorer=scorer)
    assert (answer["words_only"], answer["words_only_reason"]) == (False, "")


def test_vectors_of_a_model_this_server_lacks_are_named(agent):
    Catalog.objects.filter(slug="default").update(
        active_embedding_model="some-vendor/embedder-9"
    )
    answer = select(agent)
    assert answer["words_only"] is True
    assert "made by some-vendor/embedder-9" in answer["words_only_reason"]
    assert "reindex --catalog default" in answer["words_only_reason"]
