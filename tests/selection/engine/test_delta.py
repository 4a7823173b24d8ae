"""A patched lexical index scores changed tools by their new words at once, and
leaves every other tool's evidence exactly as the last exact build had it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from selection.engine import CatalogSnapshot, EngineSettings, SelectionRequest, select
from selection.engine.delta import overlaid
from selection.engine.normalize import normalize
from selection.engine.patch import Change, patch, with_caches
from selection.engine.scorers.lexical import bm25f, field_coverage, overlap
from tests.selection.engine.helpers import tools

QUERIES = (
    "weather forecast for Paris tomorrow",
    "send an email with the report",
    "search the web for news",
    "create a meeting in my calendar",
    "hail storm radar",
)


def snapshot() -> CatalogSnapshot:
    return CatalogSnapshot("c", "1", tools(), EngineSettings()).warm()


def signals(snap: CatalogSnapshot, text: str) -> list[np.ndarray]:
    query = normalize(SelectionRequest(query=text))
    index = snap.index
    return [
        bm25f(index, query),
        overlap(index, query, "overlap"),
        overlap(index, query, "avoid_when"),
        field_coverage(index, query, "name"),
        field_coverage(index, query, "tags"),
    ]


def patched(old: CatalogSnapshot, change: Change) -> CatalogSnapshot:
    new, stale = patch(old, change, version="2", vectors=None, inline_index_max=0)
    assert stale and new.index.base is not None
    return new


def test_a_tool_patched_with_its_own_text_scores_exactly_as_before():
    old = snapshot()
    keep = np.ones(len(old.tools), dtype=bool)
    index = overlaid(old.index, keep, {2: old.tools[2]}, len(old.tools))
    assert index.base is old.index
    new = with_caches(old, index=index)
    for text in QUERIES:
        for before, after in zip(signals(old, text), signals(new, text), strict=True):
            np.testing.assert_allclose(after, before, rtol=1e-6)


def test_an_edited_tool_is_found_by_its_new_words_and_not_by_its_old_ones():
    old = snapshot()
    edited = replace(old.tools[0], description="Hail storm radar maps.", tags=())
    new = patched(old, Change(frozenset(), {0: edited}, ()))
    hail = signals(new, "hail storm radar")[0]
    assert hail[0] > 0 and hail[1:].max() == 0
    assert (
        signals(new, "temperature rain wind")[0][0]
        < signals(old, "temperature rain wind")[0][0]
    )
    # The other tools' evidence is untouched.
    for before, after in zip(
        signals(old, QUERIES[1]), signals(new, QUERIES[1]), strict=True
    ):
        np.testing.assert_allclose(after[1:], before[1:], rtol=1e-6)


def test_a_new_tool_a_deleted_tool_and_a_second_edit_keep_rows_aligned():
    old = snapshot()
    added = replace(old.tools[1], id=9, name="page_oncall", description="Page on call.")
    one = patched(old, Change(frozenset(), {}, (added,)))
    two = patched(one, Change(frozenset({1}), {}, ()))
    again = replace(two.tools[-1], description="Page the on-call engineer by SMS.")
    three = patched(two, Change(frozenset(), {len(two.tools) - 1: again}, ()))
    assert [t.name for t in three.tools][-1] == "page_oncall"
    assert "send_email" not in {t.name for t in three.tools}
    for text in (*QUERIES, "page the on-call engineer"):
        for array in signals(three, text):
            assert len(array) == len(three.tools)
    found = signals(three, "page the on-call engineer by SMS")[0]
    assert int(np.argmax(found)) == len(three.tools) - 1
    result = select(three, SelectionRequest(query="page the on-call engineer"))
    assert result.tools[0].name == "page_oncall"
