"""A call's input has one set of rules: a plain body is read without DRF's field
machinery (calls.input), and every body, plain or not, gets exactly what
CallInputSerializer gives it: the same validated data, or the same field errors."""

from __future__ import annotations

import itertools
import uuid
from functools import partial
from typing import Any

from calls import input as call_input_module
from calls.input import CallInputSerializer, call_input
from catalog.sizes import MAX_STORED_CHARS
from tests.plain_input import reader_answer, serializer_answer, typed

FIELDS = list(CallInputSerializer().fields)
ODD = [None, "", " ", [], {}, True, False, 0, -1, 1.5, "x", ["a"], {"a": 1}]
ID = str(uuid.uuid4())
VALUES: dict[str, list[Any]] = {
    "name": ["weather.get_forecast", "a" * 200, "a" * 201, " padded", "padded\n",
             "\u00a0nbsp", "nul\x00", "lone\ud800", "é", 7],
    "arguments": [{}, {"city": "Paris"}, {"deep": {"a": [1, 2]}}, [], "{}",
                  {"big": "x" * (MAX_STORED_CHARS + 1)}, {"n\x00": 1},
                  {"days": -float("inf")}, {"n": float("nan")}],
    "catalog": ["default", "my-cat_2", " default", "default\n", "a b", "é", "a" * 300],
    "selection_id": [ID, ID.upper(), ID.replace("-", ""), "not-a-uuid"],
    "approval_id": [ID, "123"],
}  # fmt: skip


serializer_says = partial(serializer_answer, CallInputSerializer)
plain_path_says = partial(reader_answer, call_input)


def test_every_field_is_swept():
    assert set(VALUES) == set(FIELDS)


def test_each_value_of_each_field_gets_what_the_serializer_gives_it():
    for name in FIELDS:
        for value in VALUES[name] + ODD:
            body = {"name": "weather.get_forecast", name: value}
            assert plain_path_says(body) == serializer_says(body), body


def test_pairs_of_values_get_what_the_serializer_gives_them():
    for first, second in itertools.combinations(FIELDS, 2):
        for a, b in itertools.product(VALUES[first][:5], VALUES[second][:5]):
            body = {first: a, second: b}
            assert plain_path_says(body) == serializer_says(body), body


def test_bodies_that_are_not_objects_or_name_unknown_fields_get_the_same_refusal():
    for body in ([], "name", None, 3, {}, {"name": "x", "argument": {}},
                 {"name": "x", "csrfmiddlewaretoken": "t"}):  # fmt: skip
        assert plain_path_says(body) == serializer_says(body), body


def test_a_plain_body_is_read_without_the_serializer():
    # The plain path must actually serve the common bodies, not defer them all.
    for body in (
        {"name": "weather.get_forecast", "arguments": {"city": "Paris"}},
        {"name": "t", "catalog": "ops", "selection_id": None},
        {"name": "t"},
    ):
        assert typed(call_input_module._plain(body)) == serializer_says(body)[1]
