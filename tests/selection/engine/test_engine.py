"""The pipeline as a whole: deadlines, determinism, empty answers, core tools."""

from __future__ import annotations

import pytest

from selection.engine import RequestError, SelectionRequest, select

from .helpers import snapshot, tools


class SteppingClock:
    """A clock that advances ``step`` seconds every time it is read."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_zero_timeout_falls_back_to_registration_order_after_policy():
    snap = snapshot(tools(getWeatherForecast={"safe": False}))
    result = select(snap, SelectionRequest(query="calculate 2+2", timeout_ms=0))
    assert result.degraded and result.fallback_reason == "timeout"
    assert result.scorer == "registration_order"
    assert result.names == ["send_email", "searchWeb", "calculate"]
    assert "registration order" in result.tools[0].reason
    assert [e.reason for e in result.excluded] == ["unsafe"]


def test_a_deadline_passing_after_lexical_scoring_returns_the_bm25f_ranking():
    clock = SteppingClock(step=0.006)
    request = SelectionRequest(query="weather forecast", scorer="hybrid", timeout_ms=10)
    result = select(snapshot(), request, semantic={"calculate": 0.9}, clock=clock)
    assert result.degraded
    assert result.scorer == "bm25f"
    assert result.names == ["getWeatherForecast"]


def test_without_a_timeout_the_answer_is_not_degraded():
    result = select(snapshot(), SelectionRequest(query="weather forecast"))
    assert not result.degraded
    assert result.requested_scorer == result.scorer == "hybrid"


def test_the_same_request_gives_the_same_answer_with_ties_broken_by_position():
    twins = tools(
        searchWeb={"name": "lookup_b", "description": "Look up a word."},
        calculate={"name": "lookup_a", "description": "Look up a word."},
    )
    snap = snapshot(twins)
    request = SelectionRequest(query="look up a word", max_candidates=2)
    first = select(snap, request, semantic={"lookup_a": 0.5, "lookup_b": 0.5})
    again = select(snap, request, semantic={"lookup_b": 0.5, "lookup_a": 0.5})
    assert first.names == again.names == ["lookup_b", "lookup_a"]
    assert first.tools == again.tools


def test_an_unrelated_query_gets_an_empty_answer():
    result = select(snapshot(), SelectionRequest(query="tell me a joke about penguins"))
    assert result.tools == []
    assert not result.degraded


def test_scores_under_min_score_are_reported_as_rank_exclusions():
    request = SelectionRequest(query="weather forecast search", min_score=0.5)
    result = select(snapshot(), request, semantic=None)
    below = [e for e in result.excluded if e.reason == "below_min_score"]
    assert below and all(e.stage == "rank" and e.score < 0.5 for e in below)
    assert result.stats.below_min_score == len(below)


def test_tools_beyond_max_candidates_are_reported_as_cut():
    request = SelectionRequest(
        query="weather forecast web search email calendar event", max_candidates=1
    )
    result = select(snapshot(), request)
    assert len(result.names) == 1
    assert {e.reason for e in result.excluded if e.stage == "rank"} == {"cut"}


def test_core_tools_are_always_included_unless_policy_excludes_them():
    snap = snapshot(core_tools=["calculate"])
    result = select(snap, SelectionRequest(query="weather forecast"))
    assert result.names == ["calculate", "getWeatherForecast"]
    assert result.tools[0].core and "Core tool" in result.tools[0].reason
    blocked = select(
        snap, SelectionRequest(query="weather", block_tools=("calculate",))
    )
    assert "calculate" not in blocked.names


def test_the_exploration_slot_is_deterministic_for_a_query():
    snap = snapshot(exploration=True, exploration_seed=7)
    request = SelectionRequest(
        query="weather forecast web search email calendar event calculate",
        max_candidates=2,
        scorer="ensemble",
        min_score=0.0,
    )
    answers = {tuple(select(snap, request).names) for _ in range(5)}
    assert len(answers) == 1
    result = select(snap, request)
    assert result.tools[-1].exploration
    assert "Exploration slot" in result.tools[-1].reason
    assert not any(p.exploration for p in result.tools[:-1])


def test_explain_adds_the_normalised_terms_and_scorer_extras():
    request = SelectionRequest(query="weather forecast", explain=True)
    result = select(snapshot(), request)
    assert "weather" in result.debug["terms"]
    assert result.debug["snapshot"] == {"catalog": "test", "version": "1"}
    assert result.to_dict()["tools"][0]["name"] == "getWeatherForecast"


def test_an_invalid_request_names_the_faulty_fields():
    with pytest.raises(RequestError) as info:
        select(
            snapshot(), SelectionRequest(query="x", max_candidates=0, scorer="magic")
        )
    assert set(info.value.errors) == {"max_candidates", "scorer"}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"max_candidates": 1},
        {"min_score": 0.6},
        {"max_total_tokens": 60},
        {"roles": ()},
        {"allow_unsafe": True, "max_candidates": 5},
        {"visible_unsafe": False, "visible_roles": ()},
        {"categories": ("weather",)},
        {"block_tools": ("get_weather",)},
    ],
)
@pytest.mark.parametrize("scorer", ["keyword", "bm25f", "hybrid", "ensemble"])
def test_the_exclusion_account_adds_up_to_every_tool_considered(options, scorer):
    catalog = snapshot(
        tools(
            send_email={"safe": False},
            searchWeb={"allowed_roles": ("research",)},
        ),
        core_tools=["send_email"],
        category_confidence_threshold=0.3,
    )
    request = SelectionRequest(query="weather forecast email", scorer=scorer, **options)
    result = select(catalog, request)
    account = result.stats.account
    named_policy = {e.name for e in result.excluded if e.stage == "policy"}
    assert account["policy"] == len(named_policy) + result.stats.hidden
    assert account["picked"] == len(result.tools)
    cut = {e.name for e in result.excluded if e.reason == "cut"}
    assert account["cut"] == len(cut)
    parts = ("picked", "policy", "below_min_score", "scorer_threshold", "cut")
    assert sum(account[p] for p in (*parts, "no_evidence")) == account["considered"]
    assert account["considered"] == len(catalog.tools)
