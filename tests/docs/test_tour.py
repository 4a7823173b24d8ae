"""The README's tour, run as written against a stack set up like make run's demo:
the call that runs, the one that waits for a person, the approval in the console
and the call that then runs, each answer as the README shows it; the audit holds
both calls."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from calls.upstream import pool
from tests.demo import add_demo_source, load_demo_catalog, sync_demo_source
from tests.docs.shown import as_printed, check_shown

pytestmark = pytest.mark.django_db
README = "README.md"
EXECUTE = "/api/v1/tool-calls/execute"


@pytest.fixture
def agent(tmp_path, settings, monkeypatch, with_key):
    load_demo_catalog(tmp_path, monkeypatch)
    add_demo_source(tmp_path, settings)
    sync_demo_source()
    yield with_key("agent", "my-agent", roles=["support"])
    work = pool()
    work.submit(work.close_all(), 10)  # stop the pooled demo server processes


def execute(agent, body):
    return agent.post(EXECUTE, body, format="json")


def test_the_tours_calls_answer_as_the_readme_shows(agent, client, admin_user):
    email = {
        "name": "send_email",
        "arguments": {
            "to": ["dana@example.com"],
            "subject": "Quarterly report",
            "body": "Attached.",
        },
    }
    trash = {"name": "delete_file", "arguments": {"file_id": "f-301"}}

    sent = execute(agent, email)
    waiting = execute(agent, trash)
    approval_id = waiting.json()["approval_id"]
    client.force_login(admin_user)
    decided = client.post(
        f"/approvals/{approval_id}/approve/", {"reason": "Old backup, fine."}
    )
    trashed = execute(agent, {**trash, "approval_id": approval_id})

    check_shown(README, "tour-email", as_printed(sent.json()))
    assert waiting.status_code == 202
    check_shown(README, "tour-pending", as_printed(waiting.json()))
    assert decided.status_code == 302
    check_shown(README, "tour-approved", as_printed(trashed.json()))
    calls = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    outcomes = [(e.input["tool"], e.output["outcome"]) for e in calls]
    assert outcomes == [
        ("send_email", "started"),
        ("send_email", "ran"),
        ("delete_file", "pending"),
        ("delete_file", "started"),
        ("delete_file", "ran"),
    ]
    decisions = AuditEvent.objects.filter(
        event_type="approval", actor_name=admin_user.get_username()
    )
    assert decisions.exists()
