"""/select's input has one set of rules: a plain body is read without DRF's field
machinery (selection.api.input), and every body, plain or not, gets exactly what
SelectInputSerializer gives it: the same validated data, or the same field errors."""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.sizes import MAX_STORED_CHARS
from selection.api import input as select_input_module
from selection.api.input import select_input
from selection.api.serializers import SelectInputSerializer
from tests.plain_input import reader_answer, serializer_answer, typed

FIELDS = list(SelectInputSerializer().fields)
# For each field, values of every kind its field could meet: plainly valid ones,
# ones DRF coerces ("3", 3.0, "true"), and ones it refuses.
ODD = [None, "", " ", [], {}, True, False, 0, -1, 1.5, "x", ["a"], {"a": 1}]
VALUES: dict[str, list[Any]] = {
    "catalog": ["default", "my-cat_2", " default", "default ", "a b", "é", "a" * 300],
    "query": ["weather in Paris", "  padded  ", "\t", {"task": "mail"}, 7, "x" * 9000,
              "x" * (MAX_STORED_CHARS + 1)],
    "messages": [[{"role": "user", "content": "hi"}], [{"content": "no role"}],
                 [{"role": 1}], ["not a dict"], [{}], [{"role": "user"}] * 501],
    "max_candidates": [1, 3, 20, 21, 0, "3", 3.0, 3.5, 10**5000, -3, "ten"],
    "min_score": [0, 0.0, 0.05, 1, 1.0, 1.01, -0.1, "0.2", True, 10**400, 1e308],
    "scorer": ["hybrid", "bm25f", "Hybrid", "nope", 1],
    "allow_unsafe": [True, False, "true", 1, 0, "no", "maybe"],
    "roles": [["support"], [], [" support"], ["a" * 201], ["a" * 200], [1],
              ["ok", ""], "support", [None], ["x"] * 1001],
    "categories": [["travel"], ["travel", "mail"]],
    "allow_tools": [["get_weather"], [" t "]],
    "block_tools": [["send_email"], ["\n"]],
    "max_cost_per_call": [0, 0.5, 10**400, 1e308, -1, "1"],
    "max_total_tokens": [0, 100, -1, 1.0, "5"],
    "require_capabilities": [["read-only"], ["a\u00e9"]],
    "recent_tools": [["get_weather", "send_email"], [["nested"]]],
    "format": ["canonical", "openai", "mcp", "xml", ""],
    "explain": [True, False, "false", 0],
    "timeout_ms": [0, 500, 60_000, 60_001, -5, "100"],
}  # fmt: skip


serializer_says = partial(serializer_answer, SelectInputSerializer)
plain_path_says = partial(reader_answer, select_input)


def test_every_field_is_swept():
    assert set(VALUES) == set(FIELDS)


def test_each_value_of_each_field_gets_what_the_serializer_gives_it():
    for name in FIELDS:
        for value in VALUES[name] + ODD:
            base: dict[str, Any] = {"query": "what's the weather in Paris?"}
            if name == "messages":
                base = {}
            body = {**base, name: value}
            assert plain_path_says(body) == serializer_says(body), body


def test_pairs_of_values_get_what_the_serializer_gives_them():
    names = ["query", "messages", "max_candidates", "min_score", "roles", "format"]
    for first, second in itertools.combinations(names, 2):
        for a, b in itertools.product(VALUES[first][:4], VALUES[second][:4]):
            body = {first: a, second: b}
            assert plain_path_says(body) == serializer_says(body), body


def test_bodies_that_are_not_objects_or_name_unknown_fields_get_the_same_refusal():
    for body in ([], "query", None, 3, {"query": "x", "max_candidate": 3},
                 {"query": "x", "csrfmiddlewaretoken": "t"}):  # fmt: skip
        assert plain_path_says(body) == serializer_says(body), body


def test_a_plain_body_is_read_without_the_serializer():
    # The plain path must actually serve the common bodies, not defer them all.
    for body in (
        {"query": "send mail to Bob"},
        {"query": "x", "catalog": "ops", "max_candidates": 5, "min_score": 0,
         "scorer": "bm25f", "roles": ["support"], "explain": True, "format": "mcp",
         "timeout_ms": 250, "max_cost_per_call": 2, "recent_tools": ["a", "b"]},
        {"messages": [{"role": "user", "content": "hi"}], "allow_unsafe": False},
    ):  # fmt: skip
        assert typed(select_input_module._plain(body)) == serializer_says(body)[1]


def test_the_plain_path_gives_numbers_as_their_fields_make_them():
    valid = select_input({"query": "x", "min_score": 1, "max_cost_per_call": 0})
    assert type(valid["min_score"]) is float
    assert type(valid["max_cost_per_call"]) is float


KEYS = st.sampled_from(FIELDS + ["unknown"])
VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=70_000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet="ab -_é\t", max_size=6),
    st.lists(st.text(alphabet="ab -", max_size=4), max_size=3),
    st.sampled_from([v for values in VALUES.values() for v in values[:3]]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEYS, VALUE, max_size=6))
def test_any_body_gets_what_the_serializer_gives_it(body: dict[str, Any]) -> None:
    assert plain_path_says(body) == serializer_says(body)
