"""Cells for files a spreadsheet may open: a text that would start a formula is
written as text.

Excel, LibreOffice and Google Sheets evaluate a cell that starts with ``=``,
``+``, ``-`` or ``@`` (and some strip a leading tab or carriage return first), so
a query typed as ``=HYPERLINK(...)`` would otherwise land as a live formula in a
compliance reader's sheet. Such a cell gets a leading ``'``, which the
spreadsheets show as "this is text". A cell that already starts with ``'`` gets
one too, so the escape is reversible: every exported cell starting with ``'``
had exactly one added; remove it to read the stored value.

Every CSV Quiver writes goes through ``csv_cell``, and is written by ``stream_csv``.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

FORMULA_STARTS = frozenset("=+-@\t\r")
ESCAPE = "'"


def csv_cell(value: Any) -> str:
    """The text of one CSV cell, neutralised (``None`` is an empty cell)."""
    text = "" if value is None else str(value)
    if text and (text[0] in FORMULA_STARTS or text[0] == ESCAPE):
        return ESCAPE + text
    return text


def stream_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """``header``, then each row, as CSV text lines made one at a time, so a
    download streams with flat memory; the cells are written as given (pass them
    through ``csv_cell``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for values in itertools.chain([header], rows):
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        yield buffer.getvalue()
