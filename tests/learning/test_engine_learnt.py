"""The engine's learnt signal and its "no tool fits" answer (no database): a
catalog's labelled requests move the ranking only once a learnt model is applied,
the pick's reason and an excluded tool's detail name the learnt signal, and a
request whose best score is under the no-tool threshold gets no tool and says why."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from selection.engine import SelectionRequest, select
from selection.engine.learnt import LearntSignal
from selection.engine.normalize import normalize
from tests.selection.engine.helpers import snapshot

NAMES = ("getWeatherForecast", "send_email", "searchWeb", "calculate")
# Labelled requests in the catalog's own jargon: "zorp" means the calculator.
LABELS = [
    ("zorp the quarterly blarg", ("calculate",)),
    ("zorp my blarg totals", ("calculate",)),
    ("find news about blarg", ("searchWeb",)),
    ("tell me a joke", ()),
]


def learnt(**weights: float) -> LearntSignal:
    texts = [text for text, _ in LABELS]
    rows = tuple(tuple(NAMES.index(n) for n in tools) for _, tools in LABELS)
    return LearntSignal(
        model_id="test:1",
        embedding_model="",
        tools=NAMES,
        examples=np.zeros((len(LABELS), 0), dtype=np.float32),
        example_tools=rows,
        texts=tuple(texts),
        weights=weights or {"expansion": 1.0},
    )


def ask(snap, query: str, **options) -> object:
    return select(snap, SelectionRequest(query=query, **options))


def test_without_an_applied_model_the_jargon_finds_nothing():
    result = ask(snapshot(), "zorp the blarg", min_score=0)
    assert "calculate" not in result.names


def test_an_applied_model_ranks_the_tool_its_labels_name_first():
    snap = replace(snapshot(), learnt=learnt())
    result = ask(snap, "zorp the blarg", min_score=0)
    assert result.names[0] == "calculate"
    assert result.tools[0].signals["learnt"] > 0


def test_the_pick_reason_names_the_learnt_signal():
    snap = replace(snapshot(), learnt=learnt())
    result = ask(snap, "zorp the blarg", min_score=0)
    reason = result.tools[0].reason.lower()
    assert "learnt from this catalog's labelled requests" in reason


def test_a_tool_the_learnt_signal_pushed_out_is_told_so():
    snap = replace(snapshot(), learnt=learnt(expansion=4.0))
    query = "search the web for news about the zorp blarg"
    plain = ask(snapshot(), query, min_score=0, max_candidates=1)
    result = ask(snap, query, min_score=0, max_candidates=1, explain=True)
    assert plain.names == ["searchWeb"] or result.names != plain.names
    cut = {e.name: e for e in result.excluded if e.reason == "cut"}
    named = [e for e in cut.values() if "learnt signal" in e.detail]
    assert named, "an excluded tool's detail names the learnt signal"
    if result.names != plain.names:
        assert any("decided" in e.detail for e in cut.values())


def test_a_model_with_no_weights_changes_nothing():
    snap = replace(snapshot(), learnt=learnt(knn=0.0))
    base = ask(snapshot(), "weather in Paris", min_score=0)
    assert ask(snap, "weather in Paris", min_score=0).names == base.names


def test_a_model_learnt_with_another_embedding_model_uses_no_vectors():
    signal = learnt(knn=1.0, centroid=1.0, expansion=0.0)
    found = signal.scores(
        np.ones(8, dtype=np.float32), normalize(SelectionRequest(query="zorp")).terms
    )
    assert not found["knn"].any() and not found["centroid"].any()


def test_no_tool_fits_when_the_best_score_is_under_the_threshold():
    snap = snapshot(no_tool_threshold=0.99)
    result = ask(snap, "weather forecast for Paris")
    assert result.tools == []
    assert result.no_tool is not None
    assert result.no_tool["reason"] == "below_no_tool_threshold"
    assert result.no_tool["threshold"] == 0.99
    assert 0 < result.no_tool["best_score"] < 0.99
    account = result.stats.account
    assert account["considered"] == sum(
        v for k, v in account.items() if k != "considered"
    )


def test_a_request_with_min_score_zero_is_never_told_no_tool_fits():
    snap = snapshot(no_tool_threshold=0.99)
    result = ask(snap, "weather forecast for Paris", min_score=0)
    assert result.names[0] == "getWeatherForecast"
    assert result.no_tool is None


def test_a_tool_above_the_threshold_is_offered_as_before():
    plain = ask(snapshot(), "weather forecast for Paris")
    gated = ask(snapshot(no_tool_threshold=0.01), "weather forecast for Paris")
    assert gated.names == plain.names
    assert gated.no_tool is None


def test_an_empty_answer_without_a_threshold_still_says_why():
    result = ask(snapshot(), "xyzzy plugh", min_score=0.5)
    assert result.tools == []
    assert result.no_tool["reason"] in ("below_min_score", "no_candidates")


def test_the_threshold_is_a_validated_setting():
    from selection.engine.settings import EngineSettings

    errors = EngineSettings.from_dict({"no_tool_threshold": 1.5}).validate()
    assert errors == {"no_tool_threshold": "must be between 0 and 1"}
