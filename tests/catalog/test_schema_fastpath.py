"""The fast metaschema verdict never says "valid" where jsonschema finds an error,
and does say it for the plain schemas most tools have."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import validators

from bench._data import DATA_DIR
from catalog.schema_fastpath import plainly_valid
from tests.factories import weather_schema

DRAFT = validators.Draft202012Validator
META = DRAFT(DRAFT.META_SCHEMA, format_checker=DRAFT.FORMAT_CHECKER)
SEALTOOLS = DATA_DIR / "sealtools" / "tools.jsonl"  # shared/ beside the clone


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


BROKEN = [
    obj(a={"type": "strin"}),
    obj(a={"type": []}),
    obj(a={"type": ["string", "string"]}),
    obj(a={"description": 3}),
    {"type": "object", "required": ["a", "a"]},
    {"type": "object", "required": "a"},
    {"type": "object", "properties": []},
    obj(a={"enum": "x"}),
    obj(a={"type": "array", "items": 3}),
    {"type": "object", "additionalProperties": "no"},
    obj(a=[]),
]
PLAIN = [
    weather_schema(),
    obj(a={"type": ["string", "null"], "enum": ["x", None]}, b=True),
    {"type": "object", "additionalProperties": False, "required": []},
    obj(a={"type": "array", "items": obj(b={"type": "integer", "default": 3})}),
]
# Valid, but with keywords the fast path leaves to jsonschema.
OTHER = [obj(a={"type": "string", "pattern": "^a+$"}), {"$defs": {}}]


@pytest.mark.parametrize("schema", BROKEN)
def test_a_schema_the_metaschema_refuses_is_never_called_plainly_valid(schema):
    assert list(META.iter_errors(schema))
    assert not plainly_valid(schema, DRAFT)


@pytest.mark.parametrize("schema", PLAIN)
def test_a_plain_valid_schema_is_called_plainly_valid(schema):
    assert not list(META.iter_errors(schema))
    assert plainly_valid(schema, DRAFT)


@pytest.mark.parametrize("schema", OTHER)
def test_other_keywords_are_left_to_the_metaschema(schema):
    assert not plainly_valid(schema, DRAFT)


def test_an_older_draft_is_left_to_its_own_metaschema():
    assert not plainly_valid(weather_schema(), validators.Draft4Validator)


def test_it_agrees_with_the_metaschema_on_every_seal_tools_schema():
    schemas = [json.loads(line)["parameters"] for line in SEALTOOLS.open()]
    plain = [schema for schema in schemas if plainly_valid(schema, DRAFT)]
    assert all(not list(META.iter_errors(schema)) for schema in plain)
    assert len(plain) > 0.95 * len(schemas)
