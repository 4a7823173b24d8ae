"""Every CSV Quiver writes neutralises spreadsheet formulas: a cell starting with
``=``, ``+``, ``-``, ``@``, tab or CR (or the escape ``'`` itself) gets a leading
``'`` (config.spreadsheet.csv_cell), whichever path wrote the file."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from audit import export
from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event, seal_pending
from config.spreadsheet import FORMULA_STARTS, csv_cell
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db

FORMULA = '=HYPERLINK("http://x","y")'
LEADING = sorted(FORMULA_STARTS)


def parse(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def by_console(as_compliance: Any) -> str:
    response = as_compliance.get("/audit/export?format=csv")
    assert response.status_code == 200
    return response.getvalue().decode()


def by_api(as_compliance: Any) -> str:
    api = APIClient()
    api.credentials(
        HTTP_AUTHORIZATION=f"Bearer {make_client_key('reader', 'compliance')}"
    )
    response = api.get("/api/v1/audit/export?format=csv")
    assert response.status_code == 200
    return response.getvalue().decode()


def by_command(as_compliance: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        call_command("audit_export", "--format", "csv")
    return out.getvalue()


PATHS = {"console": by_console, "api": by_api, "command": by_command}


def selection_of(query: str) -> AuditEvent:
    make_tool(name="get_weather", description="Get the weather for a city.")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_client_key('bot', 'agent')}")
    response = api.post("/api/v1/select", {"query": query}, format="json")
    assert response.status_code == 200, response.content
    seal_pending()
    return AuditEvent.objects.get(event_type=EventType.SELECTION)


@pytest.mark.parametrize("path", PATHS)
def test_a_formula_typed_as_a_query_is_text_in_every_export(path, as_compliance, db):
    event = selection_of(FORMULA)
    rows = parse(PATHS[path](as_compliance))
    row = next(r for r in rows if r["id"] == str(event.pk))
    assert row["summary"].startswith("'" + FORMULA)
    assert event.summary.startswith(FORMULA)  # the stored row is untouched


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("char", LEADING, ids=repr)
def test_every_leading_character_is_escaped_in_every_export(
    path, char, as_compliance, db
):
    record_event(
        EventType.SETTINGS,
        actor=None,
        request_id=None,
        catalog_slug="default",
        summary=f"{char}cmd|' /C calc'!A0",
        input={},
        output={},
    )
    seal_pending()
    rows = parse(PATHS[path](as_compliance))
    written = [r["summary"] for r in rows if r["event_type"] == EventType.SETTINGS]
    assert written == [f"'{char}cmd|' /C calc'!A0"]


@pytest.mark.parametrize("column", export.COLUMNS)
@pytest.mark.parametrize("char", LEADING, ids=repr)
def test_every_column_escapes_every_leading_character(column, char, monkeypatch):
    """Whatever a column holds, a cell that would start a formula starts with ``'``;
    a JSON column's only such text is a negative number (a JSON string is quoted)."""
    value: Any = -1 if column in export.JSON_COLUMNS else f"{char}1+1"
    row = tuple(value if name == column else "plain" for name in export.COLUMNS)
    monkeypatch.setattr(export, "_rows", lambda events: iter([row]))
    [written] = parse("".join(export.export_lines(AuditEvent.objects.none(), "csv")))
    cell = written[column]
    if column in export.JSON_COLUMNS:
        assert cell == "'-1"
    else:
        assert cell == f"'{char}1+1"
    others = {name: written[name] for name in export.COLUMNS if name != column}
    assert set(others.values()) <= {"plain", '"plain"'}  # as text, or as JSON


@pytest.mark.parametrize("column", sorted(export.JSON_COLUMNS))
@pytest.mark.parametrize("char", LEADING, ids=repr)
def test_a_json_column_holding_a_formula_string_is_quoted_json(
    column, char, monkeypatch
):
    row = tuple(f"{char}1" if name == column else "plain" for name in export.COLUMNS)
    monkeypatch.setattr(export, "_rows", lambda events: iter([row]))
    [written] = parse("".join(export.export_lines(AuditEvent.objects.none(), "csv")))
    assert written[column].startswith('"')


@pytest.mark.parametrize("char", LEADING, ids=repr)
def test_the_helper_escapes_each_formula_start(char):
    assert csv_cell(f"{char}SUM(A1)") == f"'{char}SUM(A1)"


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("", ""),
        (None, ""),
        ("plain", "plain"),
        (" =1", " =1"),
        ("a=1", "a=1"),
        (7, "7"),
        (-7, "'-7"),
        ("'quoted", "''quoted"),
        ("\n=1", "\n=1"),
    ],
)
def test_the_helper_leaves_other_cells_as_they_are_and_is_reversible(value, cell):
    assert csv_cell(value) == cell
    if cell.startswith("'"):
        assert cell[1:] == str(value)


def test_the_jsonl_export_keeps_the_stored_text(as_compliance, db):
    event = selection_of(FORMULA)
    response = as_compliance.get("/audit/export?format=jsonl")
    lines = response.getvalue().decode().splitlines()
    summaries = [json.loads(line)["summary"] for line in lines]
    assert event.summary in summaries
