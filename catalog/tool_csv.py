"""The tool list as CSV, for the console's and the API's export alike.

Every cell goes through ``config.spreadsheet.csv_cell``, so a tool named or tagged
``=HYPERLINK(...)`` opens as text, never as a formula. Rows are written as the
cursor reads them, so a large catalog streams with flat memory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from catalog.models import Tool
from config.spreadsheet import csv_cell, stream_csv

COLUMNS = (
    "id",
    "catalog",
    "name",
    "original_name",
    "title",
    "category",
    "status",
    "safe",
    "risk_level",
    "requires_approval",
    "tags",
    "allowed_roles",
    "cost_per_call",
    "currency",
    "embedding_status",
    "version",
    "updated",
)
_SOURCE = {"catalog": "catalog__slug"}
CHUNK_ROWS = 1000


def _cell(value: Any) -> str:
    if isinstance(value, list):
        value = ", ".join(str(item) for item in value)
    elif isinstance(value, bool):
        value = "true" if value else "false"
    elif hasattr(value, "isoformat"):
        value = value.isoformat()
    return csv_cell(value)


def csv_lines(tools: QuerySet[Tool]) -> Iterator[str]:
    """The header, then one line per tool in the queryset's order."""
    columns = [_SOURCE.get(column, column) for column in COLUMNS]
    rows = tools.values_list(*columns).iterator(chunk_size=CHUNK_ROWS)
    yield from stream_csv(COLUMNS, ([_cell(value) for value in row] for row in rows))


def csv_response(tools: QuerySet[Tool]) -> StreamingHttpResponse:
    """A download of ``tools`` as ``quiver-tools.csv``."""
    response = StreamingHttpResponse(
        csv_lines(tools), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="quiver-tools.csv"'
    return response
