"""Every environment variable Quiver reads is documented in the settings reference.

The variables come from parsing the code (tests/docs/env_reads.py) and the Compose
files, never from a hand list, so a new variable without a row here fails."""

from __future__ import annotations

import re

from tests.docs.env_reads import ROOT, env_reads, project_env_reads, project_files

REFERENCE = ROOT / "docs" / "reference" / "settings.md"


def documented() -> set[str]:
    """The names in the first cell of each table row of the reference page."""
    names: set[str] = set()
    for line in REFERENCE.read_text().splitlines():
        if line.startswith("| "):
            first = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", first))
    return names


def compose_reads() -> dict[str, set[str]]:
    """What `docker compose` takes from the environment or .env."""
    found: dict[str, set[str]] = {}
    compose = (ROOT / "docker-compose.yml").read_text()
    for name in re.findall(r"\$\{([A-Z][A-Z0-9_]*)", compose):
        found.setdefault(name, set()).add("docker-compose.yml")
    example = (ROOT / ".env.example").read_text()
    for name in re.findall(r"^([A-Z][A-Z0-9_]*)=", example, flags=re.M):
        found.setdefault(name, set()).add(".env.example")
    return found


def test_every_variable_the_code_reads_is_in_the_settings_reference():
    missing = {
        name: sorted(files)
        for name, files in (project_env_reads() | compose_reads()).items()
        if name not in documented()
    }
    assert not missing, f"add a row to {REFERENCE.relative_to(ROOT)} for: {missing}"


def test_the_parser_finds_the_reads_that_settings_make_in_every_form():
    reads = project_env_reads()
    assert "QUIVER_EF_SEARCH" in reads  # env_int over two lines
    assert "QUIVER_AUDIT_KEY_FILE" in reads  # os.environ.get
    assert "AWS_ACCESS_KEY_ID" in reads  # a read nested in a reader's default
    assert "OPENBLAS_NUM_THREADS" in reads  # a loop over a tuple of names
    assert {"PORT", "QUIVER_DEV"} <= reads.keys()  # devstack's Mapping[str, str]
    assert "QUIVER_MCP_LOG" in reads  # the client's bridge
    assert len(reads) > 80


def test_a_new_variable_without_a_row_would_be_found_and_missing():
    source = (
        "import os\n"
        "from config.env import env_int\n"
        'LIMIT = env_int("QUIVER_SOMETHING_NEW", 3, minimum=1)\n'
        'TOKEN = os.environ["QUIVER_OTHER_NEW"]\n'
    )
    assert env_reads(source) == {"QUIVER_SOMETHING_NEW", "QUIVER_OTHER_NEW"}
    assert not env_reads(source) & documented()


def test_wsgi_environ_keys_are_not_taken_for_environment_variables():
    source = (
        "def serve(environ: dict, start):\n"
        '    return environ.get("PATH_INFO"), environ["REQUEST_METHOD"]\n'
    )
    assert env_reads(source) == set()


def test_every_documented_variable_exists_somewhere_in_the_repository():
    # A row for a name nothing reads is a typo or a removed setting.
    files = [
        *project_files(ROOT),
        *project_files(ROOT / "tests"),
        *(ROOT / name for name in ("Makefile", "docker-compose.yml", ".env.example")),
    ]
    haystack = "\n".join(path.read_text() for path in files)
    stale = sorted(
        name
        for name in documented()
        # NAME_FILE is read for any NAME read as a string (config.env.env_str).
        if name not in haystack and name.removesuffix("_FILE") not in haystack
    )
    assert not stale, f"documented but read nowhere: {stale}"
