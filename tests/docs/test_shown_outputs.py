"""Every output a page shows comes from a run a test checks (tests/docs/shown.py):
each marked block is checked by name in some test, names are unique, and no
tutorial or the README shows output as a comment in its commands instead."""

from __future__ import annotations

import re

from tests.docs.env_reads import ROOT
from tests.docs.shown import marks, matches

PAGES = [
    "README.md",
    *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md")),
]
TUTORIALS = [
    "README.md",
    *sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "docs" / "tutorials").glob("*.md")
    ),
]
NAME = re.compile(r'"([\w-]+)"')
# A comment in a command block that shows what the command printed or answered.
OUTPUT_COMMENT = re.compile(
    r'^\s*(#|//) *(HTTP \d{3}|\d{3} |\{|\[|"[\w@]+": |tools: |Added |step \d)'
)


def checked_names() -> set[str]:
    """The names the test modules that call check_shown spell out."""
    found: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        text = path.read_text(encoding="utf-8")
        if "node_modules" not in path.parts and "check_shown(" in text:
            found.update(NAME.findall(text))
    return found


def test_every_marked_output_is_checked_by_a_test_and_named_once():
    named = [(page, name) for page in PAGES for name in marks(page)]
    names = [name for _, name in named]
    assert len(names) == len(set(names)), names
    unchecked = sorted(
        f"{page}: {name}" for page, name in named if name not in checked_names()
    )
    assert unchecked == []


def test_no_tutorial_shows_output_as_a_comment_in_its_commands():
    found = []
    for page in TUTORIALS:
        in_code = False
        for number, line in enumerate((ROOT / page).read_text().splitlines(), 1):
            if line.strip().startswith("```"):
                in_code = not in_code
            code = in_code or line.startswith("    ")
            if code and OUTPUT_COMMENT.match(line):
                found.append(f"{page}:{number}: {line.strip()}")
    assert found == []


def test_a_shown_line_may_leave_out_what_varies_and_nothing_else():
    assert matches(['{"id": "...", "ok": true}'], ['{"id": "7f3a", "ok": true}'])
    assert not matches(['{"id": "...", "ok": true}'], ['{"id": "7f3a", "ok": false}'])
    assert matches(["first", "...", "last"], ["first", "a", "b", "last"])
    assert matches(["first", "...", "last"], ["first", "last"])
    assert not matches(["first", "last"], ["first", "middle", "last"])
    assert not matches(["one (x)"], ["one (x) and more"])
