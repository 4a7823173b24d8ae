"""safe_tool_name: any name a real catalog uses becomes one the name rule takes,
deterministically, and a name the rule already takes is left alone."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.naming import (
    MAX_TOOL_NAME_LENGTH,
    first_free_tool_name,
    name_problems,
    needs_new_name,
    safe_tool_name,
)

MANY = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        # APIBench, MetaTool, Seal-Tools, ToolBench-style names.
        ("huggingface:facebook/bart-base", "huggingface_facebook/bart-base"),
        ("torchhub:pytorch/vision:v0.10.0", "torchhub_pytorch/vision_v0.10.0"),
        ("PDF&URLTool", "PDF_URLTool"),
        ("requestFirst Aid Assistance", "requestFirst_Aid_Assistance"),
        ("Screenshot or Thumbnail_/capture", "Screenshot_or_Thumbnail_/capture"),
        (" get weather! ", "get_weather"),
        ("(beta) tool", "beta_tool"),
        ("caf\u00e9 cr\u00e8me", "cafe_creme"),
        ("\uff4cist", "list"),  # fullwidth letters fold to ASCII
        ("p\u0430yp\u0430l", "p_yp_l"),  # Cyrillic letters are not passed off as Latin
        ("../etc/passwd", "etc/passwd"),
        ("a/./b//c/", "a/b/c"),
        ("a...b", "a.b"),
        ("keep__double but space", "keep__double_but_space"),
        ("tab\tname", "tab_name"),
    ],
)  # fmt: skip
def test_real_and_hostile_names_become_safe_ones_as_documented(name, safe):
    assert safe_tool_name(name) == safe
    assert name_problems(safe) == []


@pytest.mark.parametrize(
    "name",
    [
        "__get_all_user_list",  # BFCL: a leading "_" is legal for every provider
        "user-profile/update",
        "admin.tools.list",
        "-x",
        "x" * MAX_TOOL_NAME_LENGTH,
    ],
)
def test_a_name_the_rule_takes_is_left_alone(name):
    assert safe_tool_name(name) == name
    assert not needs_new_name(name)


@pytest.mark.parametrize("name", ["", "   ", "///", "!!!", "\u540d\u524d", ".", ".."])
def test_a_name_with_nothing_usable_becomes_tool(name):
    assert safe_tool_name(name) == "tool"


def test_a_long_name_keeps_119_characters_and_a_hash_of_the_original():
    name = "x" * 129
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    assert safe_tool_name(name) == "x" * 119 + "_" + digest
    assert len(safe_tool_name(name)) == MAX_TOOL_NAME_LENGTH
    other = "x" * 128 + "y"
    assert safe_tool_name(other) != safe_tool_name(name)


def test_names_hiding_characters_are_never_renamed_but_refused():
    for name in ["bi_\u202eevil", "zero\u200bwidth", "tab\tname", "nl\n"]:
        assert not needs_new_name(name)
    assert needs_new_name("PDF&URLTool")
    assert needs_new_name("x" * 129)
    assert not needs_new_name("   ")  # empty: the format's "must not be empty"


def test_a_taken_name_gets_the_first_free_suffix_within_128_characters():
    taken = {"a_b", "a_b_2"}
    assert first_free_tool_name("a_b", lambda c: c not in taken) == "a_b_3"
    long = "y" * MAX_TOOL_NAME_LENGTH
    suffixed = first_free_tool_name(long, lambda c: c != long)
    assert suffixed == "y" * 126 + "_2"
    assert name_problems(suffixed) == []


@MANY
@given(st.text(max_size=300))
def test_any_text_becomes_a_name_the_rule_takes_and_stays_put(text):
    safe = safe_tool_name(text)
    assert safe
    assert name_problems(safe) == []
    assert safe_tool_name(safe) == safe
    assert safe_tool_name(text) == safe


@MANY
@given(st.text(alphabet="ab_./-:& ", max_size=140))
def test_names_of_rule_characters_and_their_neighbours_too(text):
    safe = safe_tool_name(text)
    assert name_problems(safe) == []
    if text and not name_problems(text):
        assert safe == text
