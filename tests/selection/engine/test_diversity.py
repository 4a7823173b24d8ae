"""A request of several sentences gets its top tools re-ordered so that
near-duplicates do not crowd out its other parts (selection.engine.diversity);
the scores stay the same set, and every other request ranks as before."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from selection.engine import CatalogSnapshot, EngineSettings, SelectionRequest, select
from selection.engine.diversity import DEPTH, diversified
from selection.engine.records import record_from_dict
from selection.engine.vectors import VectorTable, unit_rows

SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}}
TOOLS = (
    ("getUser", "Retrieve user information by user ID.", [1.0, 0.0, 0.0]),
    ("getUserInfo", "Retrieve user information.", [0.99, 0.05, 0.0]),
    ("getUserProfile", "Retrieve a user's profile information.", [0.98, 0.1, 0.0]),
    ("sendInvoice", "Send an invoice to a customer by email.", [0.0, 1.0, 0.0]),
    ("getWeather", "Current weather for a city.", [0.0, 0.0, 1.0]),
)


def table(vectors: list[list[float]]) -> VectorTable:
    matrix = unit_rows(np.array(vectors, dtype=np.float32))
    return VectorTable("m", matrix, np.ones(len(vectors), dtype=bool))


def snapshot(**settings) -> CatalogSnapshot:
    records = tuple(
        record_from_dict({"name": n, "description": d, "parameters": SCHEMA}, i, i)
        for i, (n, d, _) in enumerate(TOOLS)
    )
    vectors = table([v for _, _, v in TOOLS])
    merged = EngineSettings.from_dict(settings)
    return CatalogSnapshot("c", "1", records, merged, vectors=vectors).warm()


# The invoice tool answers the second sentence by meaning only ("bill them").
POOL = {
    "getUser": 0.6,
    "getUserInfo": 0.59,
    "getUserProfile": 0.58,
    "sendInvoice": 0.8,
    "getWeather": 0.05,
}
TWO_PARTS = "Retrieve the user information for user 5. Then bill them for the order."


def test_a_near_duplicate_moves_below_the_other_part_of_a_two_sentence_request():
    snap = snapshot()
    off = snap.with_settings(replace(snap.settings, diversity=0.0))
    plain = select(off, _ask(), semantic=POOL)
    moved = select(snap, _ask(), semantic=POOL)
    assert plain.names.index("sendInvoice") > 1
    assert moved.names[:2] == ["getUser", "sendInvoice"]
    assert sorted(p.score for p in moved.tools) == sorted(p.score for p in plain.tools)
    assert moved.stats.fusion["diversified"] is True
    invoice = moved.tools[1]
    assert invoice.signals["diversity"] > 0
    assert "unlike the tools ranked above it" in invoice.reason


def test_a_one_sentence_request_is_not_reordered():
    snap = snapshot()
    one = SelectionRequest(query="Retrieve the user information for user 5.")
    a = select(snap, replace(one, min_score=0), semantic=POOL)
    off = snap.with_settings(replace(snap.settings, diversity=0.0))
    b = select(off, replace(one, min_score=0), semantic=POOL)
    assert [(p.name, p.score) for p in a.tools] == [(p.name, p.score) for p in b.tools]
    assert a.stats.fusion["diversified"] is False


def test_without_tool_vectors_nothing_moves():
    scores = np.array([0.9, 0.8, 0.7])
    assert diversified(scores, np.ones(3, bool), None, 0.2) is None


def test_only_the_best_candidates_move_and_keep_their_scores():
    n = DEPTH + 10
    rng = np.random.default_rng(3)
    vectors = table(rng.normal(size=(n, 8)).tolist())
    scores = np.linspace(1.0, 0.1, n)
    moved = diversified(scores, np.ones(n, bool), vectors, 0.5)
    assert moved is not None
    assert sorted(moved[:DEPTH]) == sorted(scores[:DEPTH])
    assert (moved[DEPTH:] == scores[DEPTH:]).all()


def test_a_tool_the_caller_may_not_see_neither_moves_nor_is_moved_around():
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    vectors = table([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0], [0.5, 0.5]])
    mask = np.array([True, False, True, True])
    moved = diversified(scores, mask, vectors, 0.5)
    assert moved is not None and moved[1] == 0.8


def _ask() -> SelectionRequest:
    return SelectionRequest(query=TWO_PARTS, min_score=0, max_candidates=5)
