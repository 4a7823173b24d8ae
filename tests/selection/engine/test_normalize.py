"""Input normalisation: strings, JSON objects and chat messages (seed 004)."""

from __future__ import annotations

from selection.engine import SelectionRequest, normalize
from selection.engine.text import stem, tokenize


def test_identifiers_are_split_and_words_stemmed():
    assert tokenize("getWeatherForecasts for HTTPServer send_email") == [
        "get",
        "weather",
        "forecast",
        "http",
        "server",
        "send",
        "email",
    ]
    assert stem("policies") == stem("policy")
    assert stem("updating") == stem("update") == stem("updated")


def test_stopwords_and_request_fillers_are_dropped():
    assert tokenize("Could you please tell me the weather?") == ["weather"]


def test_a_json_object_query_searches_its_keys_and_values():
    query = normalize(SelectionRequest(query={"city": "Paris", "unitSystem": "metric"}))
    expected = {stem(w) for w in ("city", "paris", "unit", "system", "metric")}
    assert expected <= set(query.terms)


def test_the_latest_user_turn_counts_most_in_messages():
    messages = [
        {"role": "system", "content": "You are a helpful assistant for invoices."},
        {"role": "user", "content": "Find the weather in Rome"},
        {"role": "assistant", "content": "It is sunny in Rome."},
        {"role": "user", "content": "Now email it to Anna"},
    ]
    query = normalize(SelectionRequest(messages=messages))
    assert query.terms["email"] == 1.0
    assert query.terms["weather"] == 0.5
    assert 0 < query.terms[stem("sunny")] < 0.5
    assert stem("invoices") not in query.terms
    assert query.embed_text == "Now email it to Anna"


def test_assistant_tool_calls_become_recent_tools_newest_first():
    call = {"type": "function", "function": {"name": "searchWeb", "arguments": "{}"}}
    later = {"type": "function", "function": {"name": "send_email", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "1", "content": "[result rows]"},
        {"role": "assistant", "content": None, "tool_calls": [later]},
        {"role": "tool", "tool_call_id": "2", "content": "sent"},
        {"role": "user", "content": [{"type": "text", "text": "and add a meeting"}]},
    ]
    query = normalize(SelectionRequest(messages=messages))
    assert query.recent_tools == ("send_email", "searchWeb")
    assert query.last_tool == "send_email"
    assert stem("meeting") in query.terms
    assert "row" not in query.terms


def test_explicit_recent_tools_come_before_those_from_messages():
    call = {"type": "function", "function": {"name": "searchWeb", "arguments": "{}"}}
    request = SelectionRequest(
        messages=[
            {"role": "assistant", "tool_calls": [call]},
            {"role": "user", "content": "next"},
        ],
        recent_tools=("calculate",),
    )
    assert normalize(request).recent_tools == ("calculate", "searchWeb")
