"""Each scorer on small hand-made catalogs."""

from __future__ import annotations

from selection.engine import SelectionRequest, select

from .helpers import snapshot, tools


def _ask(snap, query, scorer, **kwargs):
    return select(snap, SelectionRequest(query=query, scorer=scorer), **kwargs)


def test_the_keyword_scorer_scores_the_share_of_query_words_found():
    result = _ask(snapshot(), "send an email", "keyword")
    assert result.names == ["send_email"]
    assert result.tools[0].score == 1.0
    assert result.scorer == "keyword"


def test_bm25f_splits_tool_names_so_camel_case_matches_words():
    result = _ask(snapshot(), "create a calendar event", "bm25f")
    assert result.names[0] == "createCalendarEvent"
    assert "name" in result.tools[0].reason


def test_bm25f_scores_stay_low_for_a_query_the_catalog_does_not_cover():
    relevant = _ask(snapshot(), "weather forecast", "bm25f").tools[0].score
    unrelated = _ask(
        snapshot(), "weather opera tickets ballet seats orchestra", "bm25f"
    )
    assert relevant > 0.5
    assert unrelated.tools == [] or unrelated.tools[0].score < relevant / 3


def test_bm25f_prefers_name_and_keyword_matches_to_description_matches():
    snap = snapshot(
        tools(calculate={"description": "Evaluate arithmetic; not a weather tool."})
    )
    result = _ask(snap, "weather", "bm25f")
    assert result.names[0] == "getWeatherForecast"


def test_the_embedding_scorer_ranks_by_the_callers_similarities():
    semantic = {"searchWeb": 0.62, "calculate": 0.35, "send_email": 0.1}
    result = _ask(snapshot(), "look something up", "embedding", semantic=semantic)
    assert result.names == ["searchWeb", "calculate", "send_email"]
    assert result.tools[0].signals["cosine"] == 0.62


def test_a_pool_of_weak_similarities_scores_low_everywhere():
    semantic = {"searchWeb": 0.16, "calculate": 0.14, "send_email": 0.1}
    for scorer in ("embedding", "hybrid"):
        result = _ask(snapshot(), "what a lovely day", scorer, semantic=semantic)
        assert result.names == []
        assert result.stats.below_min_score == 3


def test_the_embedding_scorer_falls_back_to_bm25f_without_similarities():
    result = _ask(snapshot(), "weather forecast", "embedding")
    assert result.scorer == "bm25f"
    assert result.fallback_reason == "no_semantic_scores"
    assert result.names[0] == "getWeatherForecast"


def test_the_hybrid_scorer_fuses_semantic_and_lexical_evidence():
    semantic = {"searchWeb": 0.55, "getWeatherForecast": 0.5}
    result = _ask(snapshot(), "weather forecast", "hybrid", semantic=semantic)
    assert result.names[0] == "getWeatherForecast"
    signals = result.tools[0].signals
    assert signals["lexical"] > 0 and signals["embed"] > 0 and signals["name"] > 0


def test_the_hybrid_scorer_finds_a_semantic_match_without_shared_words():
    semantic = {"calculate": 0.66}
    result = _ask(
        snapshot(), "multiply seventeen by twenty-three", "hybrid", semantic=semantic
    )
    assert result.names == ["calculate"]
    assert "semantic similarity 0.66" in result.tools[0].reason.lower()


def test_the_hybrid_minimum_lexical_overlap_drops_semantic_only_matches():
    snap = snapshot(min_lexical_overlap=1)
    result = _ask(
        snap,
        "multiply seventeen by twenty-three",
        "hybrid",
        semantic={"calculate": 0.66},
    )
    assert result.names == []
    assert ("calculate", "lexical_overlap") in [
        (e.name, e.reason) for e in result.excluded
    ]


def test_the_hybrid_minimum_combined_score_is_applied():
    snap = snapshot(min_combined_score=0.9)
    result = _ask(snap, "weather forecast", "hybrid", semantic={"send_email": 0.3})
    assert result.names == []
    assert any(e.reason == "below_min_score" for e in result.excluded)


def test_the_ensemble_boosts_the_likely_next_tool_after_the_last_one():
    snap = snapshot(transitions={"searchWeb": {"send_email": 0.9}})
    call = {"type": "function", "function": {"name": "searchWeb", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "find articles about rain"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "user", "content": "and share them with the team"},
    ]
    request = SelectionRequest(messages=messages, scorer="ensemble")
    result = select(snap, request)
    pick = {p.name: p for p in result.tools}["send_email"]
    assert pick.signals["transition"] == 0.9
    assert "often follows searchweb" in pick.reason.lower()
    assert "send_email" not in select(snapshot(), request).names


def test_the_ensemble_keeps_recently_used_tools_in_reach():
    request = SelectionRequest(
        query="weather forecast", recent_tools=("calculate",), scorer="ensemble"
    )
    result = select(snapshot(), request)
    assert result.names[:2] == ["getWeatherForecast", "calculate"]
    assert "used recently" in result.tools[1].reason.lower()


def test_a_micro_anchor_pulls_its_tool_to_the_top():
    anchors = [
        {
            "pattern": r"\b(remind|schedule)\b",
            "tools": ["createCalendarEvent"],
            "boost": 2.0,
        }
    ]
    snap = snapshot(micro_anchors=anchors)
    result = _ask(snap, "schedule a search for web news", "ensemble")
    assert result.names[0] == "createCalendarEvent"
    assert result.tools[0].signals["anchor"] == 2.0


def test_the_avoid_when_note_penalises_a_tool_the_request_warns_against():
    snap = snapshot(
        tools(
            createCalendarEvent={"avoid_when": "not for cancelling or moving events"},
        )
    )
    plain = _ask(snap, "calendar event", "ensemble").tools[0]
    warned = _ask(snap, "cancel the calendar event", "ensemble").tools[0]
    assert warned.name == plain.name == "createCalendarEvent"
    assert warned.signals["avoid"] > 0
    assert warned.score < plain.score


def test_without_context_the_ensemble_scores_like_its_relevance_signal():
    semantic = {"getWeatherForecast": 0.6}
    hybrid = _ask(snapshot(), "weather forecast", "hybrid", semantic=semantic)
    ensemble = _ask(snapshot(), "weather forecast", "ensemble", semantic=semantic)
    assert [(p.name, p.score) for p in hybrid.tools] == [
        (p.name, p.score) for p in ensemble.tools
    ]


def test_a_call_by_the_provider_safe_name_counts_as_a_call_of_the_catalog_tool():
    # A model is shown (and calls) web_search_web for the catalog's web.searchWeb.
    snap = snapshot(
        tools(searchWeb={"name": "web.searchWeb", "provider_name": "web_searchWeb"}),
        transitions={"web.searchWeb": {"send_email": 0.9}},
    )
    call = {
        "type": "function",
        "function": {"name": "web_searchWeb", "arguments": "{}"},
    }
    messages = [
        {"role": "user", "content": "find articles about rain"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "user", "content": "and share them with the team"},
    ]
    result = select(snap, SelectionRequest(messages=messages, scorer="ensemble"))
    picks = {p.name: p for p in result.tools}
    assert picks["send_email"].signals["transition"] == 0.9
    assert "often follows web.searchweb" in picks["send_email"].reason.lower()
    assert picks["web.searchWeb"].signals["sticky"] > 0


def test_an_explicit_recent_tool_by_its_provider_safe_name_keeps_it_in_reach():
    snap = snapshot(
        tools(calculate={"name": "math.calc", "provider_name": "math_calc"})
    )
    request = SelectionRequest(
        query="weather forecast", recent_tools=("math_calc",), scorer="ensemble"
    )
    result = select(snap, request)
    assert result.names[:2] == ["getWeatherForecast", "math.calc"]
    assert "used recently" in result.tools[1].reason.lower()
