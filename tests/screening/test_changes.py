"""What makes a change risky: a schema that accepts more, hints that now say
the tool does more; a narrower schema or a new text is not."""

from __future__ import annotations

from typing import Any

import pytest

from screening.changes import riskier_hints, widenings

BASE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 50},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "unit": {"enum": ["c", "f"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def changed(**edits):
    schema = {**BASE, "properties": {**BASE["properties"]}}
    for path, value in edits.items():
        if path in BASE["properties"]:
            schema["properties"][path] = value
        else:
            schema[path] = value
    return schema


@pytest.mark.parametrize(
    "new",
    [
        changed(required=[]),
        changed(additionalProperties=True),
        changed(city={"type": "string", "maxLength": 50}),
        changed(city={"type": "string", "minLength": 1, "maxLength": 500}),
        changed(days={"type": "number", "minimum": 1, "maximum": 7}),
        changed(days={"type": "integer", "minimum": 0, "maximum": 7}),
        changed(unit={"enum": ["c", "f", "k"]}),
        changed(unit={}),
        {**BASE, "properties": {**BASE["properties"], "sql": {"type": "string"}}},
        None,
    ],
)
def test_a_schema_that_accepts_more_is_a_widening(new):
    assert widenings(BASE, new)


def test_a_changed_pattern_counts_as_widening_unproven():
    old = changed(city={"type": "string", "pattern": "^[a-z]+$"})
    new = changed(city={"type": "string", "pattern": "^[a-z0-9]+$"})
    assert widenings(old, new) == ["/properties/city: pattern changed"]


@pytest.mark.parametrize(
    "new",
    [
        changed(required=["city", "days"]),
        changed(city={"type": "string", "minLength": 2, "maxLength": 20}),
        changed(unit={"enum": ["c"]}),
        changed(
            days={
                "type": "integer",
                "minimum": 1,
                "maximum": 7,
                "description": "How many days",
            }
        ),
        {**BASE, "description": "A new text"},
    ],
)
def test_a_narrower_or_reworded_schema_is_not(new):
    assert widenings(BASE, new) == []


def test_a_dropped_read_only_hint_is_risky_and_a_new_one_is_not():
    assert riskier_hints({"readOnlyHint": True}, {}) == [
        "annotations: readOnlyHint dropped",
        "annotations: destructiveHint now true",
    ]
    assert riskier_hints({}, {"readOnlyHint": True}) == []
    assert riskier_hints({"idempotentHint": True}, {"idempotentHint": False}) == [
        "annotations: idempotentHint dropped"
    ]
