"""Provider-safe names: seed 003's examples, the pattern, hashing and collisions."""

from __future__ import annotations

import hashlib
import re

import pytest

from catalog.naming import (
    MAX_NAME_LENGTH,
    assign_provider_names,
    is_provider_safe,
    provider_safe_name,
)

PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "Website Screenshot or Thumbnail_/capture",
            "Website_Screenshot_or_Thumbnail_capture",
        ),
        (
            "SEO API - Get Backlinks_GetTopBacklinks",
            "SEO_API_-_Get_Backlinks_GetTopBacklinks",
        ),
    ],
)
def test_the_seed_examples_are_sanitised_as_documented(
    name: str, expected: str
) -> None:
    assert provider_safe_name(name) == expected


def test_an_already_safe_name_is_returned_unchanged() -> None:
    for name in ("get_weather", "a", "Tool-2", "x" * 64, "snake__case"):
        assert provider_safe_name(name) == name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (" get weather! ", "get_weather"),
        ("files.read", "files_read"),
        ("a / b", "a_b"),
        ("__a b__", "a_b"),
        ("keep__double but space", "keep__double_but_space"),
        ("café", "caf"),
        ("naïve tool", "na_ve_tool"),
    ],
)
def test_runs_of_other_characters_become_one_underscore_and_ends_are_stripped(
    name: str, expected: str
) -> None:
    assert provider_safe_name(name) == expected


@pytest.mark.parametrize("name", ["", "   ", "///", "_ _", "日本語"])
def test_a_name_with_nothing_usable_becomes_tool(name: str) -> None:
    assert provider_safe_name(name) == "tool"


def test_a_long_name_is_cut_to_55_characters_plus_a_hash_of_the_original() -> None:
    name = "Very long tool name " * 10
    result = provider_safe_name(name)
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    assert len(result) <= MAX_NAME_LENGTH
    assert result.endswith("_" + digest)
    assert result.startswith("Very_long_tool_name_Very_long")
    assert len(result.removesuffix("_" + digest)) <= 55


def test_two_long_names_sharing_a_prefix_get_different_safe_names() -> None:
    first = "x" * 80 + " one"
    second = "x" * 80 + " two"
    assert provider_safe_name(first) != provider_safe_name(second)
    assert provider_safe_name(first)[:55] == provider_safe_name(second)[:55]


def test_an_unsafe_name_of_exactly_64_characters_is_not_hashed() -> None:
    name = "a" * 62 + " b"
    assert provider_safe_name(name) == "a" * 62 + "_b"


@pytest.mark.parametrize(
    "name",
    [
        "ok",
        "a" * 200,
        "🚀 launch rocket 🚀",
        "-leading-hyphen",
        'quote\'s "and" slashes\\/',
        "tab\tnew\nline",
        "x" * 63 + "!!!" + "y" * 10,
    ],
)
def test_every_result_matches_the_provider_pattern(name: str) -> None:
    result = provider_safe_name(name)
    assert PATTERN.fullmatch(result)
    assert is_provider_safe(result)


def test_sanitising_is_deterministic_and_idempotent() -> None:
    name = "Weird // name ?? with " + "z" * 90
    first = provider_safe_name(name)
    assert provider_safe_name(name) == first
    assert provider_safe_name(first) == first


def test_colliding_names_get_numbered_suffixes_in_order() -> None:
    result = assign_provider_names(["a b", "a_b", "a/b", "other"], set())
    assert result == {"a b": "a_b", "a_b": "a_b_2", "a/b": "a_b_3", "other": "other"}


def test_taken_names_are_avoided_and_the_taken_set_is_not_modified() -> None:
    taken = {"get_weather", "get_weather_2"}
    result = assign_provider_names(["get weather"], taken)
    assert result == {"get weather": "get_weather_3"}
    assert taken == {"get_weather", "get_weather_2"}


def test_a_name_listed_twice_maps_to_one_provider_name() -> None:
    result = assign_provider_names(["same", "same"], set())
    assert result == {"same": "same"}


def test_a_suffixed_name_still_fits_in_64_characters() -> None:
    base = "x" * 64
    result = assign_provider_names([base], {base})
    assert result[base] == "x" * 62 + "_2"
    assert len(result[base]) == 64


def test_assigned_names_are_distinct_safe_and_repeatable() -> None:
    names = [f"tool {i % 7} / v{i // 7}" for i in range(40)] + ["tool 0 / v0!"] * 3
    first = assign_provider_names(names, {"tool_0_v0"})
    again = assign_provider_names(names, {"tool_0_v0"})
    assert first == again
    assert len(set(first.values())) == len(first)
    assert "tool_0_v0" not in first.values()
    assert all(PATTERN.fullmatch(value) for value in first.values())


@pytest.mark.django_db
def test_tools_whose_safe_names_collide_get_distinct_provider_names():
    from tests.factories import make_tool

    first = make_tool(name="get_weather")
    second = make_tool(name="get.weather")
    third = make_tool(name="x" * 32 + "_" + "y" * 31)
    fourth = make_tool(name="x" * 32 + "." + "y" * 31)
    assert first.provider_name == "get_weather"
    assert second.provider_name == "get_weather_2"
    assert third.provider_name == "x" * 32 + "_" + "y" * 31
    assert fourth.provider_name == "x" * 32 + "_" + "y" * 29 + "_2"


@pytest.mark.django_db
def test_a_name_that_is_another_tool_s_provider_name_is_refused():
    from catalog.services import ToolConflict
    from tests.factories import make_tool

    make_tool(name="get.weather")  # its provider name: get_weather
    with pytest.raises(ToolConflict) as refused:
        make_tool(name="get_weather")
    assert str(refused.value) == (
        "name: 'get_weather' is the provider name of tool 'get.weather' in this "
        "catalog: one name means one tool"
    )
