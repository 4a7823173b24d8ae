"""Export of audit events as CSV or JSONL, one line at a time from a server-side
cursor, so a million rows stream with flat memory. Each row carries its ``seq``,
``prev_hash`` and ``hash``, so an export can be checked against the chain offline.
A CSV cell that a spreadsheet would take for a formula starts with ``'``
(config.spreadsheet: strip one leading ``'`` to read the stored value).

Used by the console, the API and ``manage.py audit_export`` alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from audit.hashing import SAID_FIELDS, SEAL_FIELDS
from audit.models import AuditEvent
from config.spreadsheet import csv_cell, stream_csv

FORMATS = ("csv", "jsonl")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}
COLUMNS = ("id", "seq", "created", *SAID_FIELDS, *SEAL_FIELDS)
JSON_COLUMNS = frozenset({"input", "output"})
CHUNK_ROWS = 2000


def _dumps(value: Any) -> str:
    return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False)


def _rows(events: QuerySet[AuditEvent]) -> Iterator[tuple[Any, ...]]:
    """Oldest first (chain order), read in chunks through a server-side cursor."""
    return events.order_by("id").values_list(*COLUMNS).iterator(chunk_size=CHUNK_ROWS)


def export_lines(events: QuerySet[AuditEvent], fmt: str) -> Iterator[str]:
    """The export as text lines (each ends with a newline), header first for CSV."""
    if fmt not in FORMATS:
        raise ValueError(f"format: must be one of {', '.join(FORMATS)}")
    return _csv_lines(events) if fmt == "csv" else _jsonl_lines(events)


def _jsonl_lines(events: QuerySet[AuditEvent]) -> Iterator[str]:
    for row in _rows(events):
        yield _dumps(dict(zip(COLUMNS, row, strict=True))) + "\n"


def _csv_lines(events: QuerySet[AuditEvent]) -> Iterator[str]:
    rows = (
        [
            csv_cell(_dumps(value) if column in JSON_COLUMNS else _text(value))
            for column, value in zip(COLUMNS, row, strict=True)
        ]
        for row in _rows(events)
    )
    yield from stream_csv(COLUMNS, rows)


def _text(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def filename(fmt: str) -> str:
    return f"quiver-audit.{fmt}"


def stream_export(events: QuerySet[AuditEvent], fmt: str) -> StreamingHttpResponse:
    """A download of ``events`` in ``fmt``, written as the cursor reads."""
    response = StreamingHttpResponse(
        export_lines(events, fmt), content_type=CONTENT_TYPES[fmt]
    )
    response["Content-Disposition"] = f'attachment; filename="{filename(fmt)}"'
    return response
