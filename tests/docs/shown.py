"""What a page shows a command printing, checked against a real run.

A page marks each output it shows with an HTML comment on the line before its code
block (invisible on GitHub and on the docs site)::

    <!-- output: tour-email -->

        {"outcome": "ran", "tool": "send_email", ...}

A test runs what the page says to run and calls ``check_shown(page, name, text)``
with what it printed; ``tests/docs/test_shown_outputs.py`` makes sure every marked
block has such a test and that no page shows output any other way. In a shown
line ``...`` stands for any text (an id, a time, the rest of a long answer); a
line that is only ``...`` stands for any number of lines. Nothing else may differ.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

from tests.docs.env_reads import ROOT

MARK = re.compile(r"^\s*<!-- output: ([\w-]+) -->\s*$")
FENCE = re.compile(r"^\s*```")


def marks(page: str) -> list[str]:
    """The names of the outputs a page marks, in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    return [m[1] for line in text.splitlines() if (m := MARK.match(line))]


def shown(page: str, name: str) -> list[str]:
    """The lines of the code block marked ``name`` on ``page`` (dedented)."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    at = [i for i, line in enumerate(lines) if (m := MARK.match(line)) and m[1] == name]
    assert len(at) == 1, f"{page}: {len(at)} blocks marked {name!r}"
    rest = lines[at[0] + 1 :]
    while rest and not rest[0].strip():
        rest = rest[1:]
    if rest and FENCE.match(rest[0]):
        end = next(i for i in range(1, len(rest)) if FENCE.match(rest[i]))
        block = rest[1:end]
    else:
        indent = len(rest[0]) - len(rest[0].lstrip())
        block = []
        for line in rest:
            if line.strip() and len(line) - len(line.lstrip()) < indent:
                break
            block.append(line)
    return textwrap.dedent("\n".join(block)).strip("\n").splitlines()


def _line(pattern: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in pattern.split("...")))


def matches(pattern: list[str], actual: list[str]) -> bool:
    """Does ``actual`` read as ``pattern`` (see the module's docstring)?"""
    if not pattern:
        return not actual
    head, rest = pattern[0].rstrip(), pattern[1:]
    if head.strip() == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    return (
        bool(actual)
        and _line(head).fullmatch(actual[0].rstrip()) is not None
        and matches(rest, actual[1:])
    )


def check_shown(page: str, name: str, printed: str) -> None:
    """Fail, showing both, unless ``printed`` reads as the block ``name`` shows."""
    expected = shown(page, name)
    actual = printed.strip("\n").splitlines()
    assert matches(expected, actual), (
        f"{page} shows as {name!r}:\n"
        + "\n".join(expected)
        + "\n\nbut the run printed:\n"
        + "\n".join(actual)
    )


def as_printed(answer: Any) -> str:
    """A JSON answer as the pages show one: on one line, ", " and ": " apart."""
    return json.dumps(answer, ensure_ascii=False)
