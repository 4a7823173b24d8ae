"""The text a tool is embedded from: identifier splitting, parts, length, hashing."""

from __future__ import annotations

import hashlib

from catalog.embedding_text import (
    MAX_TEXT_CHARS,
    embedding_text,
    split_identifier,
    text_hash,
)
from catalog.spec import ToolSpec


def weather_tool() -> ToolSpec:
    return ToolSpec(
        name="getWeatherForecast",
        title="Weather forecast",
        description="Returns the  forecast\nfor a city.",
        category="Weather",
        tags=["forecast", "climate"],
        keywords=["rain", "temperature"],
        examples=["will it rain in Oslo tomorrow", "weekend weather in Rome"],
        parameters={
            "type": "object",
            "properties": {
                "cityName": {"type": "string", "description": "City to look up"},
                "units": {"type": "string", "enum": ["metric", "imperial"]},
                "options": {
                    "type": "object",
                    "properties": {
                        "include_hourly": {
                            "type": "boolean",
                            "description": "Add hour-by-hour values",
                        }
                    },
                },
                "stops": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"lat-lon": {"description": "Coordinates"}},
                    },
                },
            },
        },
    )


def test_split_identifier_splits_camel_case() -> None:
    assert split_identifier("getWeatherForecast") == ["get", "weather", "forecast"]


def test_split_identifier_splits_snake_case_and_keeps_a_version_suffix() -> None:
    assert split_identifier("send_email_v2") == ["send", "email", "v2"]


def test_split_identifier_splits_kebab_and_dotted_names() -> None:
    assert split_identifier("search-web.results") == ["search", "web", "results"]


def test_split_identifier_keeps_acronyms_together() -> None:
    assert split_identifier("HTTPServerError") == ["http", "server", "error"]
    assert split_identifier("XMLHttpRequest") == ["xml", "http", "request"]
    assert split_identifier("userID") == ["user", "id"]


def test_split_identifier_attaches_digits_to_the_word_before_them() -> None:
    assert split_identifier("base64Encode") == ["base64", "encode"]
    assert split_identifier("getV2Data") == ["get", "v2", "data"]
    assert split_identifier("2fa_code") == ["2", "fa", "code"]


def test_split_identifier_of_punctuation_only_is_empty() -> None:
    assert split_identifier("") == []
    assert split_identifier("__--..") == []


def test_embedding_text_starts_with_the_split_name_and_the_title() -> None:
    text = embedding_text(weather_tool())
    assert text.splitlines()[0] == "get weather forecast. Weather forecast"


def test_embedding_text_contains_every_documented_part() -> None:
    text = embedding_text(weather_tool())
    for part in (
        "Returns the forecast for a city.",
        "Keywords: rain, temperature",
        "Examples: will it rain in Oslo tomorrow; weekend weather in Rome",
        "city name: City to look up",
        "units",
    ):
        assert part in text


def test_embedding_text_includes_nested_object_and_array_item_parameters() -> None:
    text = embedding_text(weather_tool())
    assert "options include hourly: Add hour-by-hour values" in text
    assert "stops lat lon: Coordinates" in text


def test_embedding_text_leaves_out_category_and_tags() -> None:
    spec = weather_tool()
    spec.category, spec.tags = "Travel", ["holiday"]
    assert embedding_text(spec) == embedding_text(weather_tool())


def test_embedding_text_leaves_out_policy_fields() -> None:
    spec = weather_tool()
    spec.risk_level = "critical"
    spec.allowed_roles = ["secret-role"]
    assert embedding_text(spec) == embedding_text(weather_tool())
    assert "secret-role" not in embedding_text(spec)


def test_embedding_text_of_a_bare_tool_is_just_its_split_name() -> None:
    assert embedding_text(ToolSpec(name="list_files")) == "list files"


def test_embedding_text_omits_a_title_that_repeats_the_name() -> None:
    spec = ToolSpec(name="list_files", title="List files")
    assert embedding_text(spec) == "list files"


def test_embedding_text_tolerates_malformed_schemas() -> None:
    spec = ToolSpec(name="x", parameters={"properties": {"a": "not a schema", "b": 3}})
    assert embedding_text(spec) == "x\nParameters: a; b"
    assert embedding_text(ToolSpec(name="x", parameters={"properties": []})) == "x"


def test_embedding_text_stops_at_a_bounded_schema_depth() -> None:
    deep: dict = {"type": "object", "properties": {}}
    node = deep
    for level in range(6):
        child: dict = {"type": "object", "properties": {}}
        node["properties"][f"level{level}"] = child
        node = child
    text = embedding_text(ToolSpec(name="deep", parameters=deep))
    assert "level0 level1" in text
    assert "level2" not in text


def test_embedding_text_is_cut_to_the_limit_at_a_word_boundary() -> None:
    spec = ToolSpec(name="verbose", description="word " * 1000)
    text = embedding_text(spec)
    assert len(text) <= MAX_TEXT_CHARS
    assert text.endswith("word")


def test_text_hash_is_the_sha256_of_model_and_text() -> None:
    expected = hashlib.sha256(b"local:m\x00hello").hexdigest()
    assert text_hash("hello", "local:m") == expected


def test_text_hash_changes_with_the_model_or_the_text() -> None:
    base = text_hash("hello", "model-a")
    assert text_hash("hello", "model-b") != base
    assert text_hash("hello!", "model-a") != base
    assert text_hash("ab", "c") != text_hash("b", "ca")
