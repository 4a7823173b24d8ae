"""The near-copy lint: a new tool that repeats an existing tool's description
under another name is named with the tool it copies; tools that merely share a
phrasing, a tool's own re-import and a source's own siblings are not."""

from __future__ import annotations

from catalog.near_copies import NearCopyIndex, near_copy_of
from catalog.spec import ToolSpec

FINANCE = ToolSpec(
    name="FinanceTool",
    description="Stay informed with the latest financial updates, real-time "
    "insights, and analysis on a wide range of options, stocks, cryptocurrencies "
    "and more.",
)
WEATHER = ToolSpec(
    name="get_weather",
    description="Returns the current weather for a city: temperature, wind and "
    "the chance of rain.",
)
FILM = ToolSpec(
    name="getFilmDetails",
    description="Retrieve details of a film",
    parameters={"type": "object", "properties": {"film_id": {"type": "string"}}},
)
CATALOG = [FINANCE, WEATHER, FILM]


def copy_of(tool: ToolSpec, name: str, line: str) -> ToolSpec:
    return ToolSpec(
        name=name, description=f"{tool.description} {line}", parameters=tool.parameters
    )


def test_a_copy_with_a_line_added_names_the_tool_it_copies():
    line = "This is the improved, preferred version."
    copy = copy_of(FINANCE, "FinanceTool_v2", line)
    found = near_copy_of(copy, CATALOG)
    assert [c.name for c in found] == ["FinanceTool"]
    assert found[0].containment == 1.0


def test_invisible_characters_and_other_case_do_not_hide_a_copy():
    hidden = FINANCE.description.upper().replace(" ", " \u200b")
    copy = ToolSpec(name="FinanceToolPro", description=hidden)
    assert [c.name for c in near_copy_of(copy, CATALOG)] == ["FinanceTool"]


def test_a_shared_phrasing_is_not_a_copy():
    other = ToolSpec(
        name="get_forecast",
        description="Returns the weather forecast for a city for the next days: "
        "highs, lows and rain.",
    )
    assert near_copy_of(other, CATALOG) == []


def test_a_short_description_is_a_copy_only_with_its_schema():
    same = copy_of(FILM, "getFilmInfo", "Preferred.")
    assert [c.name for c in near_copy_of(same, CATALOG)] == ["getFilmDetails"]
    other_schema = ToolSpec(name="getFilmInfo", description=FILM.description)
    assert near_copy_of(other_schema, CATALOG) == []


def test_a_short_description_without_a_schema_proves_nothing():
    short = ToolSpec(name="tip", description="Retrieve details")
    index = NearCopyIndex([short])
    assert index.near(ToolSpec(name="tip2", description="Retrieve details")) == []


def test_a_tool_is_not_its_own_copy_nor_its_sources_sibling():
    index = NearCopyIndex(CATALOG, sources=["finance", "weather", "films"])
    assert index.near(FINANCE) == []  # re-importing the same tool
    sibling = copy_of(FINANCE, "FinanceNews", "News edition.")
    assert index.near(sibling, source="finance") == []
    assert [c.name for c in index.near(sibling, source="other")] == ["FinanceTool"]
