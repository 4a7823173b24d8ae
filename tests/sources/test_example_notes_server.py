"""examples/notes_server.py, the tutorial's upstream, syncs as the tutorial says:
list_notes read-only and safe, add_note safe, delete_note unsafe and approval-bound."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from catalog.choices import JobState
from tests.conftest import wait_until
from tests.sources.conftest import sync
from tests.upstream import free_port

pytestmark = pytest.mark.django_db

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notes_server.py"


def answers(url: str) -> bool:
    try:
        httpx.post(url, json={}, timeout=1)
    except httpx.TransportError:
        return False
    return True


@pytest.fixture
def notes_url() -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until(lambda: answers(url), timeout=30, what="the notes server")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_tutorials_notes_server_syncs_with_the_flags_its_hints_give(
    notes_url, make_source
):
    source = make_source(notes_url, name="notes")

    job = sync(source)

    assert job.state == JobState.SUCCEEDED, job.error
    tools = {link.upstream_name: link.tool for link in source.links.all()}
    assert sorted(tools) == ["add_note", "delete_note", "list_notes"]
    listing, adding, deleting = (
        tools["list_notes"],
        tools["add_note"],
        tools["delete_note"],
    )
    assert listing.name == "notes__list_notes"
    assert listing.safe and not listing.requires_approval
    assert "read-only" in listing.capabilities
    assert adding.safe and not adding.requires_approval
    assert deleting.requires_approval and not deleting.safe
    assert deleting.risk_level == "high"
