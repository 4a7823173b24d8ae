"""Label files of the console: JSONL and CSV, read into the API's items.

JSONL is one API item a line; CSV has ``query`` and ``tools`` columns, tools joined
by ``|``. Items are numbered from 0 in file order, as the refusals name them. The
API's rules for a body hold for the whole file, so a file that breaks one is refused
naming the line and the field. Samples: static/learning/labels-sample.{jsonl,csv};
the formats: docs/how-to/labels-and-evaluation.md.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from config import jsonparse
from learning.services.labels import MAX_LABELS

# JSONL lines end at CR, LF or CRLF only: JSON text may hold U+2028 and friends,
# which str.splitlines would also split at.
_LINE_END = re.compile(r"\r\n|\r|\n")


class UploadError(ValueError):
    """The file as a whole cannot be read."""


def read_label_file(name: str, data: bytes) -> list[Any]:
    """The items of an uploaded ``.jsonl`` or ``.csv`` file."""
    text = _text(data)
    lower = name.lower()
    if lower.endswith(".csv"):
        numbered = _csv_items(text)
    elif lower.endswith((".jsonl", ".ndjson", ".json")):
        numbered = _jsonl_items(text)
    else:
        raise UploadError("file: a .jsonl or .csv file")
    if len(numbered) > MAX_LABELS:
        raise UploadError(
            f"file: at most {MAX_LABELS} labels; this one has {len(numbered)}"
        )
    for index, (line, item) in enumerate(numbered):
        bad = jsonparse.find_bad_text(item, f"labels[{index}]")
        if bad is not None:
            raise UploadError(f"line {line}: {bad}: {jsonparse.BAD_TEXT_RULE}")
    return [item for _, item in numbered]


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UploadError(f"file: must be UTF-8 text (line {line} is not)") from exc


def _jsonl_items(text: str) -> list[tuple[int, Any]]:
    """Each label with its line number."""
    items: list[tuple[int, Any]] = []
    for number, line in enumerate(_LINE_END.split(text), start=1):
        if not line.strip():
            continue
        at = f"line {number}: labels[{len(items)}]"
        if "\x00" in line:
            raise UploadError(f"{at}: {jsonparse.BAD_TEXT_RULE}")
        try:
            items.append((number, jsonparse.loads_unique(line)))
        except jsonparse.DuplicateKey as exc:
            field = jsonparse.within(at, exc.path)
            raise UploadError(f"{field}: {jsonparse.DUPLICATE_KEY_RULE}") from exc
        except jsonparse.JSONTooDeep as exc:
            raise UploadError(f"{at}: {exc}") from exc
        except ValueError:
            items.append((number, "(not valid JSON)"))
    return items


def _csv_items(text: str) -> list[tuple[int, Any]]:
    """Each row's label with the line it starts on."""
    reader = csv.DictReader(io.StringIO(text))
    fields = set(reader.fieldnames or [])
    if not {"query", "tools"} <= fields:
        raise UploadError("file: a CSV needs the header columns query and tools")
    items: list[tuple[int, Any]] = []
    first = reader.line_num + 1
    for row in reader:
        tools = [t.strip() for t in (row.get("tools") or "").split("|") if t.strip()]
        items.append((first, {"query": row.get("query") or "", "tools": tools}))
        first = reader.line_num + 1
    return items
