"""The commands reference documents every management command Quiver adds."""

from __future__ import annotations

from tests.docs.env_reads import ROOT, project_files

REFERENCE = ROOT / "docs" / "reference" / "commands.md"


def project_commands() -> set[str]:
    return {
        path.stem
        for path in project_files(ROOT)
        if path.parent.name == "commands"
        and path.parent.parent.name == "management"
        and not path.stem.startswith("_")
    }


def test_every_management_command_has_a_section_in_the_reference():
    text = REFERENCE.read_text()
    missing = sorted(c for c in project_commands() if f"### `{c}`" not in text)
    assert not missing, f"document in {REFERENCE.relative_to(ROOT)}: {missing}"


def test_the_commands_are_found_in_every_app():
    assert {"bootstrap", "audit_verify", "add_stdio_source"} <= project_commands()
