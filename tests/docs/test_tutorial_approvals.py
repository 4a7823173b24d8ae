"""docs/tutorials/mcp-server-with-approvals.md, run as written against make run's
demo catalog with examples/notes_server.py: each answer as the page shows it."""

from __future__ import annotations

import pytest

from catalog.models import Catalog
from jobs.models import Job
from jobs.services import claim_job
from sources.sync import run_sync
from tests.demo import embed_demo, load_demo_catalog
from tests.docs.shown import as_printed, check_shown

pytestmark = pytest.mark.django_db
PAGE = "docs/tutorials/mcp-server-with-approvals.md"
EXECUTE = "/api/v1/tool-calls/execute"
NOTES = "http://127.0.0.1:9000/mcp"


@pytest.fixture
def demo(tmp_path, monkeypatch):
    return load_demo_catalog(tmp_path, monkeypatch)


def run_job(job_id: int) -> None:
    """The queued job, run here as a worker would."""
    claimed = claim_job(job_id)
    assert claimed is not None
    run_sync(claimed)


def test_the_tutorial_answers_as_it_shows(
    demo, notes_url, with_key, client, admin_user
):
    admin = with_key("admin", "ops")
    added = admin.post(
        "/api/v1/catalogs/default/sources",
        {"name": "notes", "kind": "mcp", "url": notes_url},
        format="json",
    )
    assert added.status_code == 201, added.json()
    source, job = added.json()["id"], added.json()["sync_job"]["id"]
    tested = admin.post(f"/api/v1/sources/{source}/test")
    run_job(job)
    synced = admin.get(f"/api/v1/jobs/{job}/")
    embed_demo(Catalog.objects.get(slug="default"))
    agent = with_key("agent", "notes-bot", allow_unsafe=True)
    found = agent.post(
        "/api/v1/select",
        {"query": "delete the note about watering the plants", "allow_unsafe": True},
        format="json",
    )
    listed = agent.post(
        EXECUTE, {"name": "notes__list_notes", "arguments": {}}, format="json"
    )
    delete = {"name": "notes__delete_note", "arguments": {"note_id": 1}}
    waiting = agent.post(EXECUTE, delete, format="json")
    approval_id = waiting.json()["approval_id"]
    client.force_login(admin_user)
    client.post(f"/approvals/{approval_id}/approve/", {"reason": "Done watering."})
    deleted = agent.post(EXECUTE, {**delete, "approval_id": approval_id}, format="json")

    shown = (
        ("notes-added", added.json()),
        ("notes-test", tested.json()),
        ("notes-synced", synced.json()),
        ("notes-select", found.json()),
        ("notes-list", listed.json()),
        ("notes-pending", waiting.json()),
        ("notes-approved", deleted.json()),
    )
    for name, answer in shown:
        # The page runs the server on port 9000; the test, on a free port.
        check_shown(PAGE, name, as_printed(answer).replace(notes_url, NOTES))
    assert Job.objects.get(pk=job).state == "succeeded"
    assert waiting.status_code == 202
