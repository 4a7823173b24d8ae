"""The LLM scorer, driven by fake callables that stand in for a paid LLM endpoint."""

from __future__ import annotations

from selection.engine import SelectionRequest, build_prompt, parse_answer, select

from .helpers import snapshot, tools

QUERY = "weather forecast and email"


def _fake(answer: str, seen: list[str] | None = None):
    """A stand-in for a paid LLM endpoint that always answers ``answer``."""

    def call(prompt: str) -> str:
        if seen is not None:
            seen.append(prompt)
        return answer

    return call


def _llm(answer: str, **kwargs):
    request = SelectionRequest(query=QUERY, scorer="llm", **kwargs)
    return select(snapshot(), request, llm=_fake(answer))


def test_the_llm_picks_are_scored_by_rank():
    result = _llm('["send_email", "getWeatherForecast"]')
    assert result.names == ["send_email", "getWeatherForecast"]
    assert result.tools[0].score > result.tools[1].score >= 0.5
    assert result.scorer == "llm" and not result.degraded
    assert result.tools[0].reason.startswith("Chosen by the LLM")


def test_the_prompt_lists_the_shortlist_and_asks_for_a_json_array():
    seen: list[str] = []
    select(
        snapshot(), SelectionRequest(query=QUERY, scorer="llm"), llm=_fake("[]", seen)
    )
    assert "getWeatherForecast" in seen[0] and "JSON array" in seen[0]
    again = build_prompt(QUERY, snapshot().tools[:1], 3, descriptions=False)
    assert "- getWeatherForecast\n" in again


def test_policy_excluded_tools_never_reach_the_llm_or_the_answer():
    seen: list[str] = []
    snap = snapshot(tools(send_email={"safe": False}))
    request = SelectionRequest(query=QUERY, scorer="llm")
    result = select(snap, request, llm=_fake('["send_email", "calculate"]', seen))
    assert "send_email" not in seen[0]
    assert result.names == ["calculate"]


def test_truncated_json_and_prose_are_parsed():
    names = ["send_email", "getWeatherForecast", "Website Screenshot/capture"]
    assert parse_answer('Sure! ["send_email", "getWeatherFor', names) == ["send_email"]
    assert parse_answer('```json\n["GETWEATHERFORECAST"]\n```', names) == [
        "getWeatherForecast"
    ]
    assert parse_answer('["Website_Screenshot_capture"]', names) == [names[2]]
    assert parse_answer("send_email, nonsense", names) == ["send_email"]


def test_an_unparseable_answer_falls_back_to_keywords():
    result = _llm("I cannot help with that.")
    assert result.scorer == "keyword"
    assert result.fallback_reason == "llm_unparseable"
    assert result.degraded
    assert result.names[0] in {"getWeatherForecast", "send_email"}


def test_an_empty_selection_falls_back_to_keywords():
    assert _llm("[]").fallback_reason == "llm_unparseable"


def test_no_llm_means_the_keyword_fallback():
    request = SelectionRequest(query=QUERY, scorer="llm")
    result = select(snapshot(), request)
    assert (result.scorer, result.fallback_reason) == ("keyword", "llm_unavailable")


def test_an_llm_that_raises_falls_back_to_keywords():
    def broken(prompt: str) -> str:
        raise ConnectionError("endpoint down")

    result = select(snapshot(), SelectionRequest(query=QUERY, scorer="llm"), llm=broken)
    assert (result.scorer, result.fallback_reason) == ("keyword", "llm_error")


def test_answers_beyond_max_candidates_are_ignored():
    result = _llm('["calculate", "send_email", "searchWeb"]', max_candidates=2)
    assert result.names == ["calculate", "send_email"]
