"""make run's demo source: the demo MCP server behind the demo catalog's own tools,
so the tour's calls run (one at once, the destructive one after an approval),
added once however often make run starts."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from audit.models import AuditEvent
from calls.upstream import pool
from catalog.demo.server import listing
from catalog.models import Tool
from jobs.choices import JobState
from sources.models import Source
from sources.services import delete_source
from tests.demo import add_demo_source, load_demo_catalog, sync_demo_source

pytestmark = pytest.mark.django_db
EXECUTE = "/api/v1/tool-calls/execute"


@pytest.fixture
def demo(tmp_path, settings, monkeypatch):
    catalog = load_demo_catalog(tmp_path, monkeypatch)
    said = add_demo_source(tmp_path, settings)
    yield catalog, said
    work = pool()
    work.submit(work.close_all(), 10)  # stop the pooled demo server processes


def test_the_demo_source_runs_the_demo_catalogs_own_tools_and_a_sync_changes_none(
    demo,
):
    catalog, said = demo
    tools_before = catalog.tools.count()

    job = sync_demo_source()

    assert "Added the demo source 'demo' behind 7 tools" in said
    assert job.state == JobState.SUCCEEDED, job.error
    assert {item["outcome"] for item in job.items} == {"unchanged"}
    source = Source.objects.get(name="demo")
    linked = {link.upstream_name: link.tool.name for link in source.links.all()}
    assert linked == {name: name for name in listing()}
    assert catalog.tools.count() == tools_before  # no demo__ copies
    [link_event] = AuditEvent.objects.filter(input__action="link")
    assert link_event.input["tools"] == sorted(listing())
    assert Tool.objects.get(name="delete_file").version == 1


def test_a_call_runs_at_once_and_the_destructive_one_waits_for_a_person(demo, with_key):
    sync_demo_source()
    agent = with_key("agent", "tour-agent", roles=["support"])
    email = {
        "name": "send_email",
        "arguments": {"to": ["dana@example.com"], "subject": "Q3", "body": "Here."},
    }
    trash = {"name": "delete_file", "arguments": {"file_id": "f-301"}}

    sent = agent.post(EXECUTE, email, format="json")
    waiting = agent.post(EXECUTE, trash, format="json")

    assert sent.status_code == 200, sent.json()
    assert sent.json()["outcome"] == "ran"
    assert sent.json()["structured_content"]["status"] == "sent"
    assert waiting.status_code == 202, waiting.json()
    assert waiting.json()["status"] == "pending_approval"
    outcomes = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    assert [e.output["outcome"] for e in outcomes] == ["started", "ran", "pending"]


def test_it_is_added_once_and_never_again_after_someone_deleted_it(
    demo, tmp_path, settings, admin_user
):
    again = add_demo_source(tmp_path, settings)
    delete_source(Source.objects.get(name="demo"), actor=admin_user)
    after_delete = add_demo_source(tmp_path, settings)

    assert "not added: it was added before" in again
    assert "not added: it was added before" in after_delete
    assert not Source.objects.filter(name="demo").exists()


def test_without_the_settings_files_entry_it_says_why_and_adds_nothing(
    tmp_path, settings, monkeypatch
):
    load_demo_catalog(tmp_path, monkeypatch)
    settings.QUIVER_SOURCES_FILE = ""
    out = StringIO()
    call_command("add_demo_source", stdout=out)

    assert "not added: stdio_name: 'demo': QUIVER_SOURCES_FILE is not set" in (
        out.getvalue()
    )
    assert not Source.objects.exists()
