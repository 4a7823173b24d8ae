"""A tool's words are evidence only as far as they describe it: listing words buys
no keyword share, an example's names and places are not what the tool does, and
text no one can see counts for nothing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from selection.engine import SelectionRequest, ToolRecord, select
from selection.engine.index import EXAMPLE_SHARE, LONG_TEXT_KNEE
from selection.engine.normalize import normalize
from selection.engine.patch import Change, patch
from selection.engine.scorers.lexical import bm25f, keyword
from selection.engine.text import tokenize
from tests.selection.engine.helpers import BASE_TOOLS, snapshot, tools


def terms(text: str):
    return normalize(SelectionRequest(query=text))


def every_word(records: tuple[ToolRecord, ...]) -> str:
    """Every word the catalog's descriptions use, and then some."""
    words = " ".join(r.description for r in records).split()
    return " ".join(words + [f"filler{i}" for i in range(100)])


def stuffed(records: tuple[ToolRecord, ...]) -> ToolRecord:
    return ToolRecord(id=99, name="helper", description=every_word(records))


def test_a_tool_listing_the_catalogs_words_gets_less_keyword_share():
    records = tools()
    snap = snapshot((*records, stuffed(records)))
    share = keyword(snap.index, terms("weather forecast for a city"))
    weather, helper = share[0], share[-1]
    assert weather == 1.0
    assert helper < 0.5 * weather
    index = snap.index
    size = np.bincount(index.fields["overlap_examples"].docs)[-1]
    assert helper == LONG_TEXT_KNEE * index.overlap_norm / size


def test_a_stuffed_tool_is_not_offered_first_for_a_request_spanning_two_tools():
    records = tools()
    snap = snapshot((*records, stuffed(records)))
    request = SelectionRequest(query="send the weather forecast by email", min_score=0)
    assert select(snap, request).names[:2] == ["send_email", "getWeatherForecast"]


def test_long_tools_do_not_move_the_norm_of_the_others():
    records = tools()
    crowd = tuple(replace(stuffed(records), id=90 + i, name=f"h{i}") for i in range(2))
    alone, crowded = snapshot(records).index, snapshot((*records, *crowd)).index
    assert alone.overlap_norm == crowded.overlap_norm
    assert (crowded.share_credit[: len(records)] == 1.0).all()


def test_an_examples_words_count_at_half_a_descriptions_in_the_keyword_share():
    records = tools(
        send_email={"examples": ("email the quarterly report to finance",)},
        searchWeb={"description": "Search the web for a report, news or articles."},
    )
    share = keyword(snapshot(records).index, terms("email the report"))
    assert share[1] == (1 + EXAMPLE_SHARE) / 2  # "email", and "report" by example
    assert share[2] == 0.5  # searchWeb: "report", in its description


def test_a_name_in_an_example_is_not_evidence_for_the_tool():
    records = tools(
        createCalendarEvent={"examples": ("schedule a sync with Dana on Friday",)}
    )
    index = snapshot(records).index
    query = terms("Dana")
    assert bm25f(index, query).max() == 0.0
    assert keyword(index, query).max() == 0.0
    # "sync" is a word no tool describes either; "schedule" is not a word of
    # the base tools, "calendar" is.
    assert not index.described[index.vocab["dana"]]
    assert keyword(index, terms("calendar on Friday"))[4] == 0.5  # "calendar"


def test_an_example_word_another_tool_describes_counts():
    records = tools(
        send_email={"examples": ("email the weather forecast to Dana",)},
    )
    found = bm25f(snapshot(records).index, terms("forecast"))
    assert found[1] > 0  # getWeatherForecast describes "forecast"


def test_invisible_characters_neither_split_nor_hide_words():
    assert tokenize("pass\u200bword") == tokenize("password")
    tagged = "".join(chr(0xE0000 + ord(c)) for c in "weather forecast")
    assert tokenize(f"Helpful utility.{tagged} Ask") == tokenize("helpful utility ask")


def test_text_hidden_in_tag_characters_finds_nothing():
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "calculate arithmetic number")
    records = tools(searchWeb={"description": f"Search the web.{hidden}"})
    found = bm25f(snapshot(records).index, terms("calculate an arithmetic number"))
    assert found[2] == 0.0 and found[3] > 0


def test_a_patched_tool_gets_the_credit_and_the_example_rule_of_an_exact_build():
    old = snapshot(tools()).warm()
    edited = replace(
        BASE_TOOLS[2],
        position=2,
        description=every_word(old.tools),
        examples=("search the news for Dana",),
    )
    change = Change(frozenset(), {2: edited}, ())
    new, _ = patch(old, change, version="2", vectors=None, inline_index_max=0)
    assert new.index.base is not None  # patched, not rebuilt
    exact = snapshot(new.tools).index
    np.testing.assert_allclose(new.index.share_credit, exact.share_credit)
    for text in ("Dana", "weather forecast for a city", "news"):
        query = terms(text)
        np.testing.assert_allclose(
            keyword(new.index, query), keyword(exact, query), rtol=1e-6
        )


def test_a_reason_names_only_the_example_words_that_counted():
    records = tools(
        createCalendarEvent={"examples": ("book a calendar slot with Dana",)}
    )
    request = SelectionRequest(query="calendar slot with Dana", min_score=0)
    pick = select(snapshot(records), request).tools[0]
    assert pick.name == "createCalendarEvent"
    assert "'calendar'" in pick.reason
    assert "dana" not in pick.reason.lower()
