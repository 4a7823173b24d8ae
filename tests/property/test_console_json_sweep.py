"""The console refuses what the API refuses (issue 30, item 14): every console
form that reads JSON (a tool's schema and annotations, an import pasted or
uploaded, selection settings, "Try it" messages, the Evaluation page's settings
box, a label file) held to the API's rules for a body. NUL, lone surrogates,
nesting past the one depth limit, a repeated key, numbers JSON cannot hold and
bytes that are not UTF-8 are each a form error naming the field (a label file's:
the line and the field), never a 500, and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.models import AuditEvent
from catalog.models import Tool
from config.jsonparse import MAX_BODY_DEPTH
from jobs.models import Job
from learning.models import Evaluation, Label
from selection.models import SelectionSettings
from tests.factories import make_tool, weather_schema

pytestmark = pytest.mark.django_db

DEEP = "[" * 10_000 + "]" * 10_000
ONE_TOO_DEEP = "[" * (MAX_BODY_DEPTH + 1) + "]" * (MAX_BODY_DEPTH + 1)
# JSON text of an object with one bad spot, and words the refusal must show.
BAD_OBJECTS = {
    "nul": ('{"a": "x\\u0000y"}', ".a: must not contain NUL"),
    "nul-key": ('{"\\u0000": 1}', ".\\u0000: must not contain NUL"),
    "lone-surrogate": ('{"a": ["ok", "\\ud800"]}', ".a[1]: must not contain NUL"),
    "repeated-key": ('{"a": 1, "b": {"c": 1, "c": 2}}', ".b.c: is a duplicate key"),
    "ten-thousand-deep": (DEEP, f"JSON nested deeper than {MAX_BODY_DEPTH} levels"),
    "one-too-deep": ('{"a": ' + ONE_TOO_DEEP + "}",
                     f"JSON nested deeper than {MAX_BODY_DEPTH} levels"),
    "huge-float": ('{"a": 1e400}', "not valid JSON"),
    "huge-integer": ('{"a": 1' + "0" * 5000 + "}", "not valid JSON"),
    "nan": ('{"a": NaN}', "not valid JSON"),
}  # fmt: skip


def written() -> tuple[int, ...]:
    return (
        Tool.objects.count(),
        Job.objects.count(),
        Label.objects.count(),
        Evaluation.objects.count(),
        SelectionSettings.objects.filter(data__gt={}).count(),
        AuditEvent.objects.count(),
    )


def tool_form(**fields: str) -> dict[str, str]:
    data = {
        "catalog": "default",
        "name": "new_tool",
        "description": "A new tool.",
        "parameters": json.dumps(weather_schema()),
        "safe": "on",
        "risk_level": "low",
        "status": "active",
    }
    return {**data, **fields}


# (form, its field as the error names it, how to post text there)
FORMS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "tool-parameters": (
        "parameters",
        lambda c, t: c.post("/tools/new/", tool_form(parameters=t)),
    ),
    "tool-annotations": (
        "annotations",
        lambda c, t: c.post("/tools/new/", tool_form(annotations=t)),
    ),
    "import-pasted": (
        "text",
        lambda c, t: c.post("/import/", {"catalog": "default", "text": t}),
    ),
    "import-file": (
        "file",
        lambda c, t: c.post(
            "/import/",
            {"catalog": "default", "file": SimpleUploadedFile("t.json", t.encode())},
        ),
    ),
    "selection-settings": (
        "settings",
        lambda c, t: c.post("/catalogs/default/selection-settings/", {"settings": t}),
    ),
    "try-it-messages": (
        "query",
        lambda c, t: c.post(
            "/try/", {"catalog": "default", "query": t, "as_messages": "on"}
        ),
    ),
    "evaluation-settings": (
        "settings",
        lambda c, t: c.post("/catalogs/default/evaluation/", {"settings": t}),
    ),
}


@pytest.fixture
def console(as_curator: Any) -> Any:
    make_tool(name="get_weather", description="Weather.")
    Label.objects.create(catalog_id=1, query="weather in Oslo", tools=["get_weather"])
    return as_curator


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_console_json_field_refuses_what_the_api_refuses(console, form):
    field, post = FORMS[form]
    before = written()
    for bad, (text, words) in BAD_OBJECTS.items():
        response = post(console, text)
        page = response.content.decode()
        assert response.status_code in (200, 400), (form, bad, response.status_code)
        named = f"{field}{words}" if words.startswith(".") else words
        assert named.replace("'", "&#x27;") in page or named in page, (form, bad)
        assert field in page
    assert written() == before


LABEL_FILES = {
    "jsonl-escaped-nul": (
        "l.jsonl",
        b'{"query": "ok", "tools": []}\n\n{"query": "a\\u0000", "tools": []}\n',
        "line 3: labels[1].query: must not contain NUL",
    ),
    "jsonl-raw-nul": (
        "l.jsonl",
        b'{"query": "ok", "tools": []}\n{"query": "a\x00", "tools": []}\n',
        "line 2: labels[1]: must not contain NUL",
    ),
    "jsonl-lone-surrogate": (
        "l.jsonl",
        b'{"messages": [{"role": "user", "content": "\\udfff"}], "tools": []}\n',
        "line 1: labels[0].messages[0].content: must not contain NUL",
    ),
    "jsonl-surrogate-tool": (
        "l.jsonl",
        b'{"query": "ok", "tools": ["\\ud83d"]}\n',
        "line 1: labels[0].tools[0]: must not contain NUL",
    ),
    "jsonl-repeated-key": (
        "l.jsonl",
        b'{"query": "ok", "tools": []}\n{"query": "a", "query": "b", "tools": []}\n',
        "line 2: labels[1].query: is a duplicate key",
    ),
    "jsonl-ten-thousand-deep": (
        "l.jsonl",
        b'{"query": "ok", "tools": []}\n' + DEEP.encode() + b"\n",
        f"line 2: labels[1]: JSON nested deeper than {MAX_BODY_DEPTH} levels",
    ),
    "jsonl-not-utf8": (
        "l.jsonl",
        b'{"query": "ok", "tools": []}\n{"query": "\xff", "tools": []}\n',
        "file: must be UTF-8 text (line 2 is not)",
    ),
    "csv-nul": (
        "l.csv",
        b"query,tools\nweather,get_weather\nrain,get_\x00weather\n",
        "line 3: labels[1].tools[0]: must not contain NUL",
    ),
    "csv-nul-in-a-quoted-multiline-cell": (
        "l.csv",
        b'query,tools\n"two\nlines\x00",get_weather\n',
        "line 2: labels[0].query: must not contain NUL",
    ),
    "csv-not-utf8": (
        "l.csv",
        b"query,tools\nweather,get_weather\n\xed\xa0\x80,get_weather\n",
        "file: must be UTF-8 text (line 3 is not)",
    ),
}


def test_a_label_file_the_api_would_refuse_is_a_form_error_naming_line_and_field(
    console,
):
    before = written()
    for case, (name, data, words) in LABEL_FILES.items():
        upload = SimpleUploadedFile(name, data)
        response = console.post("/catalogs/default/labels/upload/", {"file": upload})
        assert response.status_code == 400, case
        assert words in response.content.decode(), case
    assert written() == before


def test_a_label_line_at_the_depth_limit_is_read_and_refused_as_an_item(console):
    """The limit is the API's: a line 64 deep is parsed (and refused as a label
    of the wrong shape, like any other item), one deeper refuses the file."""
    deep = "[" * MAX_BODY_DEPTH + "]" * MAX_BODY_DEPTH
    data = b'{"query": "ok", "tools": ["get_weather"]}\n' + deep.encode() + b"\n"
    upload = SimpleUploadedFile("l.jsonl", data)
    response = console.post("/catalogs/default/labels/upload/", {"file": upload})
    assert response.status_code == 200
    assert "labels[1]: must be an object" in response.content.decode()
    assert Label.objects.filter(query="ok").exists()
