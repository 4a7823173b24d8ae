"""Long requests are split into sentences; each sentence's best tool counts."""

from __future__ import annotations

import numpy as np

from selection.engine import CatalogSnapshot, SelectionRequest, select
from selection.engine.sentences import (
    MAX_SENTENCES,
    SentencePool,
    mix,
    pooled,
    split_sentences,
)
from tests.selection.engine.helpers import tools


def test_a_request_splits_at_stops_questions_exclamations_and_line_breaks():
    text = (
        "Book a table for two. Is it raining in Oslo? Call my mum now!\n"
        "Send the report to Dana"
    )
    assert split_sentences(text) == [
        "Book a table for two.",
        "Is it raining in Oslo?",
        "Call my mum now!",
        "Send the report to Dana",
    ]


def test_fragments_under_three_words_are_ignored():
    text = "Thanks. Convert 200 dollars to euros. OK! Then email the total to Bob."
    assert split_sentences(text) == [
        "Convert 200 dollars to euros.",
        "Then email the total to Bob.",
    ]


def test_a_decimal_point_or_a_dotted_name_does_not_end_a_sentence():
    text = (
        "Set the price to 3.50 euros in shop.example.com today. Email Bob the new list."
    )
    assert split_sentences(text) == [
        "Set the price to 3.50 euros in shop.example.com today.",
        "Email Bob the new list.",
    ]


def test_one_sentence_is_no_split_at_all():
    assert split_sentences("What's the weather in Paris?") == []
    assert split_sentences("What's the weather in Paris? Thanks!") == []
    assert split_sentences("") == []


def test_at_most_six_sentences_each_once():
    text = " ".join(f"Please do task number {i}." for i in range(10))
    found = split_sentences(text + " Please do task number 0.")
    assert len(found) == MAX_SENTENCES
    assert found[0] == "Please do task number 0." and len(set(found)) == len(found)


def test_the_score_mixes_the_best_sentence_with_the_whole_request():
    whole = np.array([0.5, 0.2, 0.1])
    per_sentence = np.array([[0.6, 0.1, 0.0], [0.2, 0.9, 0.0]])
    assert np.allclose(mix(whole, per_sentence), [0.57, 0.69, 0.03])
    assert np.array_equal(mix(whole, np.zeros((0, 3))), whole)


def test_the_pool_unites_each_sentences_nearest_tools():
    whole = np.array([0.9, 0.8, 0.1, 0.0, 0.0])
    per_sentence = np.array([[0.9, 0.7, 0.0, 0.1, 0.0], [0.1, 0.0, 0.2, 0.8, 0.1]])
    assert set(pooled(whole, np.zeros((0, 5)), 2)) == {0, 1}
    pool = pooled(whole, per_sentence, 2)
    assert set(pool) == {0, 1, 2, 3}
    assert np.isclose(pool[3], 0.7 * 0.8 + 0.3 * 0.0)


def test_a_pool_knows_the_whole_requests_best_cosine_under_any_names():
    whole = np.array([0.3, 0.2, 0.1])
    per_sentence = np.array([[0.1, 0.9, 0.0], [0.0, 0.0, 0.8]])
    pool = pooled(whole, per_sentence, 1)
    assert pool.request_best == 0.3
    named = pool.renamed({0: "a", 1: "b", 2: None}.get)
    assert isinstance(named, SentencePool) and named.request_best == 0.3
    assert set(named) == {"a", "b"}


def test_one_good_sentence_does_not_make_the_request_more_confident():
    snapshot = CatalogSnapshot("c", "v", tools()).warm()
    request = SelectionRequest(
        query="Tell me a joke about penguins. Then email it to Bob.", min_score=0
    )
    mixed = {"send_email": 0.62, "searchWeb": 0.15}
    plain = select(snapshot, request, semantic=mixed)
    pooled_ = select(snapshot, request, semantic=SentencePool(mixed, 0.2))
    # Same ranking; every score scaled by the whole request's (lower) confidence.
    assert pooled_.names == plain.names
    assert pooled_.tools[0].score < plain.tools[0].score
