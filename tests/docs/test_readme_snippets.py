"""Code the README quotes from examples/ is the examples' code, which
tests/frameworks runs (the docs site includes the examples' sections with
pymdownx.snippets, so only the README, which GitHub renders as it is, keeps a
copy)."""

from __future__ import annotations

import re
import textwrap

from tests.docs.env_reads import ROOT

MARKER = re.compile(r"# --8<-- \[(start|end):(\w+)\]")


def sections(path: str) -> dict[str, list[str]]:
    """The example's marked sections, each dedented, blank lines dropped."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (ROOT / path).read_text().splitlines():
        marker = MARKER.search(line)
        if marker and marker[1] == "start":
            current = found.setdefault(marker[2], [])
        elif marker:
            current = None
        elif current is not None:
            current.append(line)
    return {
        name: [line for line in textwrap.dedent("\n".join(lines)).splitlines() if line]
        for name, lines in found.items()
    }


def quoted_blocks(readme: str) -> list[tuple[str, list[str]]]:
    """(example, code lines) for each code block of a list item (indented 7)
    that follows text naming an examples/ file."""
    blocks: list[tuple[str, list[str]]] = []
    example, code = "", []
    for line in [*readme.splitlines(), ""]:
        if example and line.startswith(" " * 7):
            code.append(line.strip())
            continue
        if code:
            blocks.append((example, code))
            example, code = "", []
        named = re.findall(r"`(examples/\w+\.py)`", line)
        example = named[-1] if named else example
    return blocks


def contains(lines: list[str], part: list[str]) -> bool:
    stripped = [line.strip() for line in lines]
    return any(
        stripped[start : start + len(part)] == part
        for start in range(len(stripped) - len(part) + 1)
    )


def test_every_snippet_the_readme_quotes_from_an_example_is_in_one_of_its_sections():
    blocks = quoted_blocks((ROOT / "README.md").read_text())
    assert [example for example, _ in blocks] == ["examples/pydantic_ai_agent.py"]
    for example, code in blocks:
        marked = sections(example).values()
        assert any(contains(lines, code) for lines in marked), (example, code)


def test_a_changed_line_would_not_be_found():
    [(example, code)] = quoted_blocks((ROOT / "README.md").read_text())
    changed = [*code[:-1], code[-1].replace("toolsets", "tools")]
    assert not any(contains(lines, changed) for lines in sections(example).values())
