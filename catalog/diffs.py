"""Diffs of JSON values as tagged lines, shown by the tool history and the audit
console alike (no views here, so any app may import it)."""

from __future__ import annotations

import difflib
import json
from typing import Any


def diff_lines(
    old: Any, new: Any, old_label: str, new_label: str
) -> list[dict[str, str]]:
    """A unified diff of two pretty-printed JSON values, each line tagged as file,
    hunk, added, removed or context for styling."""
    before = json.dumps(old, indent=2, sort_keys=True, ensure_ascii=False)
    after = json.dumps(new, indent=2, sort_keys=True, ensure_ascii=False)
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), old_label, new_label, lineterm=""
    )
    tagged = []
    for number, line in enumerate(lines):
        if number < 2:
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = {"+": "added", "-": "removed"}.get(line[:1], "context")
        tagged.append({"kind": kind, "text": line})
    return tagged
