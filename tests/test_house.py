"""House rules the code can check: a module docstring says what the module is and
why in a few lines (docs/how-to/development.md); a longer spec belongs on the docs
site, with a pointer to it from the docstring; no module grows past 500 lines."""

from __future__ import annotations

import ast
import subprocess

from tests.docs.env_reads import ROOT

LONGEST_MODULE_DOCSTRING = 14
LONGEST_MODULE = 500
NOT_APPLICATION = ("tests/", "bench/", "docs/", "examples/")


def application_modules() -> list[str]:
    """Every tracked Python file but tests, benchmarks, docs, examples, migrations."""
    listed = subprocess.run(
        ["git", "ls-files", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [
        path
        for path in listed
        if not path.startswith(NOT_APPLICATION)
        and "/migrations/" not in path
        and "/tests/" not in path
    ]


def docstring_lines(path: str) -> int:
    docstring = ast.get_docstring(ast.parse((ROOT / path).read_text()), clean=False)
    return docstring.count("\n") + 1 if docstring else 0


def test_every_module_docstring_says_what_and_why_in_a_few_lines():
    modules = application_modules()
    lines = {path: docstring_lines(path) for path in modules}
    too_long = {path: n for path, n in lines.items() if n > LONGEST_MODULE_DOCSTRING}

    assert len(modules) > 300, len(modules)
    assert too_long == {}, too_long


def test_no_application_module_is_over_500_lines():
    modules = application_modules()
    lines = {path: len((ROOT / path).read_text().splitlines()) for path in modules}
    too_long = {path: n for path, n in lines.items() if n > LONGEST_MODULE}

    assert len(modules) > 300, len(modules)
    assert too_long == {}, too_long
