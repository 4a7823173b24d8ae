"""A larger synthetic catalog: the index answers from postings, not a scan."""

from __future__ import annotations

from selection.engine import CatalogSnapshot, SelectionRequest, ToolRecord, select

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
]


def _catalog(size: int) -> CatalogSnapshot:
    tools = []
    for i in range(size):
        a, b = WORDS[i % 10], WORDS[(i // 10) % 10]
        tools.append(
            ToolRecord(
                id=i,
                name=f"tool{a.title()}{b.title()}{i}",
                description=f"Handles {a} and {b} records, batch {i // 100}.",
                position=i,
            )
        )
    tools.append(
        ToolRecord(
            id=size,
            name="zebraCounter",
            description="Counts zebras in a photo.",
            position=size,
        )
    )
    return CatalogSnapshot("big", "1", tuple(tools)).warm()


def test_a_rare_word_finds_its_tool_among_thousands_and_touches_only_its_postings():
    snap = _catalog(3000)
    result = select(snap, SelectionRequest(query="count the zebras", scorer="bm25f"))
    assert result.names == ["zebraCounter"]
    assert result.stats.candidates == 1
    assert result.stats.considered == 3001


def test_common_words_rank_the_tools_that_have_both():
    snap = _catalog(3000)
    request = SelectionRequest(query="alpha bravo records", max_candidates=5)
    result = select(snap, request)
    assert len(result.names) == 5
    assert all("Alpha" in name and "Bravo" in name for name in result.names)
