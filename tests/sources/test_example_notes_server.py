"""examples/notes_server.py, the tutorial's upstream, syncs as the tutorial says:
list_notes read-only and safe, add_note safe, delete_note unsafe and approval-bound."""

from __future__ import annotations

import pytest

from jobs.choices import JobState
from tests.sources.conftest import sync

pytestmark = pytest.mark.django_db


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
