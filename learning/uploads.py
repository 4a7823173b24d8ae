"""Label files of the console: JSONL and CSV, read into the API's items.

* JSONL: one label a line, exactly the API's item: ``{"query": "...", "tools":
  ["name", ...]}`` or ``{"messages": [{"role": "user", "content": "..."}],
  "tools": [...]}``; ``"tools": []`` when no tool fits. Blank lines are skipped;
  a line that is not JSON is refused like any bad item.
* CSV (UTF-8, a header row): columns ``query`` and ``tools``, the tools of a
  row separated by ``|`` (an empty cell: no tool fits). Conversations need JSONL.

Items are numbered from 0 in file order (blank lines skipped), as the refusals
name them (``labels[3]``). Samples: static/learning/labels-sample.{jsonl,csv}.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from learning.services.labels import MAX_LABELS


class UploadError(ValueError):
    """The file as a whole cannot be read."""


def read_label_file(name: str, data: bytes) -> list[Any]:
    """The items of an uploaded ``.jsonl`` or ``.csv`` file."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UploadError("file: must be UTF-8 text") from exc
    if "\x00" in text:
        raise UploadError("file: must not contain NUL characters")
    lower = name.lower()
    if lower.endswith(".csv"):
        items = _csv_items(text)
    elif lower.endswith((".jsonl", ".ndjson", ".json")):
        items = _jsonl_items(text)
    else:
        raise UploadError("file: a .jsonl or .csv file")
    if len(items) > MAX_LABELS:
        raise UploadError(
            f"file: at most {MAX_LABELS} labels; this one has {len(items)}"
        )
    return items


def _jsonl_items(text: str) -> list[Any]:
    items: list[Any] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except (ValueError, RecursionError):
            items.append("(not valid JSON)")
    return items


def _csv_items(text: str) -> list[Any]:
    reader = csv.DictReader(io.StringIO(text))
    fields = set(reader.fieldnames or [])
    if not {"query", "tools"} <= fields:
        raise UploadError("file: a CSV needs the header columns query and tools")
    items = []
    for row in reader:
        tools = [t.strip() for t in (row.get("tools") or "").split("|") if t.strip()]
        items.append({"query": row.get("query") or "", "tools": tools})
    return items
