"""The near-copy lint: a new tool that repeats an existing tool's description
under another name is named with the tool it copies; tools that merely share a
phrasing, a tool's own re-import and a source's own siblings are not."""

from __future__ import annotations

from screening.near_copies import Definition, NearCopyIndex, near_copy_of

FINANCE = Definition(
    name="FinanceTool",
    description="Stay informed with the latest financial updates, real-time "
    "insights, and analysis on a wide range of options, stocks, cryptocurrencies "
    "and more.",
)
WEATHER = Definition(
    name="get_weather",
    description="Returns the current weather for a city: temperature, wind and "
    "the chance of rain.",
)
FILM = Definition(
    name="getFilmDetails",
    description="Retrieve details of a film",
    parameters={"type": "object", "properties": {"film_id": {"type": "string"}}},
)
CATALOG = [FINANCE, WEATHER, FILM]


def copy_of(tool: Definition, name: str, line: str) -> Definition:
    return Definition(
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
    copy = Definition(name="FinanceToolPro", description=hidden)
    assert [c.name for c in near_copy_of(copy, CATALOG)] == ["FinanceTool"]


def test_a_shared_phrasing_is_not_a_copy():
    other = Definition(
        name="get_forecast",
        description="Returns the weather forecast for a city for the next days: "
        "highs, lows and rain.",
    )
    assert near_copy_of(other, CATALOG) == []


def test_a_short_description_is_a_copy_only_with_its_schema():
    same = copy_of(FILM, "getFilmInfo", "Preferred.")
    assert [c.name for c in near_copy_of(same, CATALOG)] == ["getFilmDetails"]
    other_schema = Definition(name="getFilmInfo", description=FILM.description)
    assert near_copy_of(other_schema, CATALOG) == []


def test_a_short_description_without_a_schema_proves_nothing():
    short = Definition(name="tip", description="Retrieve details")
    index = NearCopyIndex([short])
    assert index.near(Definition(name="tip2", description="Retrieve details")) == []


def test_a_tool_is_not_its_own_copy_nor_its_sources_sibling():
    index = NearCopyIndex(CATALOG, sources=["finance", "weather", "films"])
    assert index.near(FINANCE) == []  # re-importing the same tool
    sibling = copy_of(FINANCE, "FinanceNews", "News edition.")
    assert index.near(sibling, source="finance") == []
    assert [c.name for c in index.near(sibling, source="other")] == ["FinanceTool"]


def test_a_template_with_a_word_changed_is_not_a_copy():
    renting = Definition(
        name="HouseRentingTool",
        description="Tool that provide all sorts of information about house renting",
    )
    buying = Definition(
        name="HousePurchasingTool",
        description="Tool that provide all sorts of information about house purchasing",
    )
    assert near_copy_of(buying, [renting]) == []


def test_a_list_of_the_catalogs_words_copies_no_tool():
    listed = " ".join(sorted({w for t in CATALOG for w in t.description.split()}))
    assert (
        near_copy_of(Definition(name="everything", description=listed), CATALOG) == []
    )


def test_one_tool_under_two_sources_prefixes_is_not_a_copy_of_itself():
    index = NearCopyIndex([copy_of(FINANCE, "a__finance", "")], sources=["a"])
    assert index.near(copy_of(FINANCE, "b__finance", ""), source="b") == []
    assert [c.name for c in index.near(copy_of(FINANCE, "b__stocks", ""), "b")] == [
        "a__finance"
    ]


def test_a_curators_tools_are_compared_with_every_other():
    index = NearCopyIndex(CATALOG)  # no sources: a curator's own tools
    copy = copy_of(WEATHER, "weather_now", "Preferred.")
    assert [c.name for c in index.near(copy)] == ["get_weather"]


def test_a_tool_indexed_again_is_judged_by_what_it_says_now():
    index = NearCopyIndex([FINANCE])
    index.add(Definition(name="FinanceTool", description=WEATHER.description))
    copy = copy_of(FINANCE, "FinanceToolPro", "Preferred.")
    assert index.near(copy) == []
    index.add(FINANCE, source="finance")  # now known as a source's tool
    assert index.near(copy, source="finance") == []
    assert [c.name for c in index.near(copy, source="other")] == ["FinanceTool"]


def test_a_description_of_a_few_words_proves_nothing_even_with_its_schema():
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    index = NearCopyIndex(
        [Definition(name="get_id", description="Get ID", parameters=schema)]
    )
    match = Definition(
        name="get_match", description="Get a match by its ID", parameters=schema
    )
    assert index.near(match) == []
