"""Stdio sources against a real stdio MCP server (tests/stdio_upstream.py, run with
this interpreter): configured in the server's settings file only, added by the
``add_stdio_source`` command (audited, no secret in the row), synced and called like
an HTTP source, never creatable or changeable over the API, and a missing name or
a bad settings file is a clear error naming the key."""

from __future__ import annotations

import json
import os
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.models import AuditEvent
from calls.upstream import pool
from jobs.choices import JobState
from sources.models import Source, SourceKind, SourceStatus
from sources.secrets import decrypt_headers
from tests.conftest import wait_until
from tests.sources.conftest import sync

pytestmark = pytest.mark.django_db

SCRIPT = str(Path(__file__).resolve().parents[1] / "stdio_upstream.py")
TOKEN = "stdio-token-4b8e2f6a9c1d"
SOURCES = "/api/v1/catalogs/default/sources"
EXECUTE = "/api/v1/tool-calls/execute"


def write(path: Path, data: Any) -> None:
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def entry(log: Path, token: str = TOKEN) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [SCRIPT],
        "env": {"STDIO_UPSTREAM_LOG": str(log), "STDIO_UPSTREAM_TOKEN": token},
        "cwd": str(log.parent),
    }


class Configured:
    def __init__(self, tmp_path: Path) -> None:
        self.file = tmp_path / "sources.json"
        self.log = tmp_path / "calls.jsonl"

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def configured(tmp_path: Path, settings: Any) -> Any:
    setup = Configured(tmp_path)
    write(setup.file, {"stdio": {"local": entry(setup.log)}})
    settings.QUIVER_SOURCES_FILE = str(setup.file)
    yield setup
    work = pool()
    work.submit(work.close_all(), 10)  # stop the pooled stdio processes


def add(name: str = "local", *more: str) -> str:
    out = StringIO()
    call_command("add_stdio_source", "default", name, *more, stdout=out)
    return out.getvalue()


def source_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="source_changed").order_by("pk"))


def everything_recorded() -> str:
    return json.dumps(
        [[e.summary, e.input, e.output] for e in AuditEvent.objects.all()],
        default=str,
    )


def test_the_command_adds_a_stdio_source_as_one_audit_event_without_secrets(
    configured, catalog
):
    said = add()

    source = Source.objects.get()
    assert "Added stdio source 'local'" in said
    assert (source.kind, source.stdio_name, source.url) == ("stdio", "local", "")
    assert source.status == SourceStatus.SYNCING  # its first sync is queued
    [event] = source_events()
    assert event.input["action"] == "create"
    assert event.input["kind"] == "stdio"
    assert event.input["stdio_name"] == "local"
    assert event.input["command"] == os.path.basename(sys.executable)
    assert "url" not in event.input
    assert TOKEN not in everything_recorded()
    assert SCRIPT not in everything_recorded()  # the arguments are not shown either


def test_the_entry_may_have_another_name_than_the_source(configured, catalog):
    add("files", "--stdio-name", "local")
    assert Source.objects.get().stdio_name == "local"
    assert Source.objects.get().name == "files"


def test_a_sync_brings_the_stdio_servers_tools_namespaced_with_flags_mapped(
    configured, catalog
):
    add()
    source = Source.objects.get()

    job = sync(source)

    assert job.state == JobState.SUCCEEDED, job.error
    assert source.status == SourceStatus.OK and source.tool_count == 7
    tools = {link.upstream_name: link.tool for link in source.links.all()}
    assert tools["get_forecast"].name == "local__get_forecast"
    assert tools["get_forecast"].safe
    assert not tools["get_forecast"].requires_approval
    assert "open-world" in tools["get_forecast"].tags
    assert tools["delete_file"].requires_approval and not tools["delete_file"].safe
    assert tools["send_note"].requires_approval  # no hints: the spec's defaults
    assert tools["set_thermostat"].annotations["idempotentHint"] is True


def test_a_call_runs_on_the_stdio_server_and_its_result_comes_back(
    configured, catalog, with_key
):
    add()
    source = Source.objects.get()
    sync(source)
    agent = with_key("agent", "stdio-agent", allow_unsafe=True)

    answer = agent.post(
        EXECUTE,
        {"name": "local__get_forecast", "arguments": {"city": "Oslo", "days": 1}},
        format="json",
    )

    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["outcome"] == "ran"
    assert body["structured_content"] == {
        "city": "Oslo",
        "forecast": ["day 1: sunny, 21 C"],
    }
    [reached] = configured.calls()
    assert reached["name"] == "get_forecast"
    assert reached["arguments"] == {"city": "Oslo", "days": 1}
    assert reached["token"] == TOKEN  # the settings file's env reached the command
    started, event = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    assert started.output["outcome"] == "started"
    assert event.input["source"] == "local"
    assert event.output["outcome"] == "ran"
    assert TOKEN not in answer.content.decode()
    assert TOKEN not in everything_recorded()


def test_the_settings_file_is_read_at_every_call(configured, catalog, with_key):
    add()
    sync(Source.objects.get())
    agent = with_key("agent", "stdio-agent", allow_unsafe=True)
    call = {"name": "local__get_forecast", "arguments": {"city": "Rome"}}
    assert agent.post(EXECUTE, call, format="json").json()["outcome"] == "ran"

    write(configured.file, {"stdio": {"local": entry(configured.log, "rotated")}})
    assert agent.post(EXECUTE, call, format="json").json()["outcome"] == "ran"

    first, second = configured.calls()
    assert (first["token"], second["token"]) == (TOKEN, "rotated")
    assert first["pid"] != second["pid"]  # the changed command is a new process


def test_a_bad_file_at_sync_or_call_time_is_an_error_naming_the_key_never_a_500(
    configured, catalog, with_key
):
    add()
    source = Source.objects.get()
    sync(source)
    agent = with_key("agent", "stdio-agent", allow_unsafe=True)
    bad = entry(configured.log)
    bad["args"] = [SCRIPT, 7]
    write(configured.file, {"stdio": {"local": bad}})

    job = sync(source)
    answer = agent.post(
        EXECUTE,
        {"name": "local__get_forecast", "arguments": {"city": "Rome"}},
        format="json",
    )

    assert job.state != JobState.SUCCEEDED
    assert source.status == SourceStatus.ERROR
    assert "QUIVER_SOURCES_FILE: stdio.local.args" in source.last_error
    assert source.tool_count == 7  # the tools stay as they were
    assert answer.status_code == 200
    assert answer.json()["outcome"] == "failed"
    assert "stdio.local.args: must be a list of strings" in answer.json()["reason"]
    assert configured.calls() == []


def test_the_api_refuses_to_create_a_stdio_source(configured, admin_api):
    answer = admin_api.post(
        SOURCES,
        {"name": "local", "kind": "stdio", "url": "http://127.0.0.1:9/mcp"},
        format="json",
    )
    assert answer.status_code == 400 and "kind" in answer.json()["fields"]
    answer = admin_api.post(
        SOURCES,
        {"name": "local", "url": "http://127.0.0.1:9/mcp", "stdio_name": "local"},
        format="json",
    )
    assert answer.status_code == 400 and "stdio_name" in answer.json()["fields"]
    assert not Source.objects.exists() and not source_events()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "mcp"}, "kind"),
        ({"stdio_name": "other"}, "stdio_name"),
        ({"url": "http://127.0.0.1:9/mcp"}, "url"),
        ({"headers": {"X-Key": "value"}}, "headers"),
        ({"command": "/bin/sh"}, "command"),
    ],
)
def test_the_api_never_changes_a_stdio_sources_kind_or_command(
    configured, admin_api, change, field
):
    add()
    source = Source.objects.get()
    events = len(source_events())

    answer = admin_api.patch(f"/api/v1/sources/{source.pk}", change, format="json")

    assert answer.status_code == 400, answer.json()
    assert field in answer.json()["fields"]
    source.refresh_from_db()
    assert (source.kind, source.stdio_name, source.url) == ("stdio", "local", "")
    assert len(source_events()) == events


def test_the_api_shows_a_stdio_source_by_its_entry_name_only(configured, admin_api):
    add()
    source = Source.objects.get()

    shown = admin_api.get(f"/api/v1/sources/{source.pk}")
    limits = admin_api.patch(
        f"/api/v1/sources/{source.pk}", {"timeout_seconds": 12}, format="json"
    )

    assert shown.status_code == 200
    assert shown.json()["kind"] == "stdio" and shown.json()["stdio_name"] == "local"
    assert TOKEN not in shown.content.decode()
    assert SCRIPT not in shown.content.decode()
    assert limits.status_code == 200 and limits.json()["timeout_seconds"] == 12


def test_a_name_missing_from_the_file_is_refused_with_a_clear_message(
    configured, catalog
):
    with pytest.raises(CommandError) as refused:
        add("nothere")

    assert "'nothere' is not configured under 'stdio' in QUIVER_SOURCES_FILE" in str(
        refused.value
    )
    assert not Source.objects.exists() and not source_events()


def test_without_the_setting_no_stdio_source_can_be_added(catalog, settings):
    settings.QUIVER_SOURCES_FILE = ""
    with pytest.raises(CommandError, match="QUIVER_SOURCES_FILE is not set"):
        add()
    assert not Source.objects.exists()


@pytest.mark.parametrize(
    ("contents", "named"),
    [
        ({"stdio": {"local": {"command": 5}}}, "stdio.local.command"),
        ({"stdio": {"local": {"command": "x", "args": "-v"}}}, "stdio.local.args"),
        (
            {"stdio": {"local": {"command": "x", "env": {"K": TOKEN, "N": 1}}}},
            "stdio.local.env",
        ),
        ({"stdio": {"local": {"command": "x", "cwd": 3}}}, "stdio.local.cwd"),
        ({"stdio": {"local": {"command": "x", "shell": True}}}, "stdio.local.shell"),
        ({"stdio": {"local": "python"}}, "stdio.local: must be an object"),
        ({"stdio": ["local"]}, "stdio: must be an object"),
        ({"http": {}}, "http: not a known key"),
        ([], "must be a JSON object"),
        ('{"stdio": {"local": ', "not valid JSON"),
        ("x" * 1_000_001, "larger than 1000000 bytes"),
    ],
)
def test_a_bad_settings_file_is_a_clear_error_naming_the_key(
    configured, catalog, contents, named
):
    write(configured.file, contents)

    with pytest.raises(CommandError) as refused:
        add()

    assert named in str(refused.value)
    assert "QUIVER_SOURCES_FILE" in str(refused.value)
    assert TOKEN not in str(refused.value)
    assert not Source.objects.exists() and not source_events()


def test_an_unreadable_settings_file_is_a_clear_error(catalog, settings, tmp_path):
    settings.QUIVER_SOURCES_FILE = str(tmp_path / "missing.json")
    with pytest.raises(CommandError, match="QUIVER_SOURCES_FILE: cannot read"):
        add()


def test_the_kind_is_stdio(configured):
    assert SourceKind.STDIO == "stdio"


def test_the_console_shows_a_stdio_source_and_edits_only_its_limits(
    configured, client, admin_user
):
    add()
    source = Source.objects.get()
    client.force_login(admin_user)
    page = f"/sources/{source.pk}/"

    shown = client.get(page)
    saved = client.post(
        page,
        {
            "url": "http://127.0.0.1:9/mcp",
            "headers": "X-Key: value",
            "timeout_seconds": "12",
        },
    )

    assert shown.status_code == 200
    assert "stdio <code>local</code>" in shown.content.decode()
    assert TOKEN not in shown.content.decode()
    assert saved.status_code == 302
    source.refresh_from_db()
    assert source.timeout_seconds == 12 and source.url == ""
    assert decrypt_headers(source) == {}
    assert (source.kind, source.stdio_name) == ("stdio", "local")


def test_testing_the_connection_starts_the_command_and_lists_a_page(
    configured, admin_api
):
    add()
    source = Source.objects.get()

    answer = admin_api.post(f"/api/v1/sources/{source.pk}/test")

    assert answer.status_code == 200
    assert answer.json()["ok"] is True
    assert answer.json()["server"] == "test-stdio-upstream 1"
    assert answer.json()["tools_on_first_page"] == 3
    assert answer.json()["more_pages"] is True


ECHO_SECRET = (
    "import os, sys, time; sys.stdout.write(os.environ['LEAK'] + '\\n'); "
    "sys.stdout.flush(); time.sleep(0.5)"
)


def add_leaky(configured: Any, script: str) -> None:
    """A source ``leaky`` whose command runs ``script`` with ``LEAK`` (the
    secret) in its environment."""
    leaky = {"command": sys.executable, "args": ["-c", script], "env": {"LEAK": TOKEN}}
    write(configured.file, {"stdio": {"local": entry(configured.log), "leaky": leaky}})
    add("leaky")


def test_a_command_that_prints_its_secret_env_never_gets_it_into_a_record(
    configured, catalog, caplog
):
    add_leaky(configured, ECHO_SECRET)
    source = Source.objects.get()

    job = sync(source)

    assert job.state != JobState.SUCCEEDED
    assert source.status == SourceStatus.ERROR and source.last_error
    assert TOKEN not in source.last_error
    assert TOKEN not in json.dumps([job.errors, job.items], default=str)
    assert TOKEN not in everything_recorded()
    assert "Failed to parse JSONRPC message" in caplog.text  # logged, but not the line
    assert TOKEN not in caplog.text


STDERR_SECRET = (
    "import os, sys; "
    "sys.stderr.write('starting with token ' + os.environ['LEAK'] + '\\n'); "
    "sys.stderr.write('second line\\n'); sys.stderr.flush()"
)


def test_a_command_that_prints_its_secret_env_on_stderr_is_logged_masked(
    configured, catalog, caplog, capfd
):
    add_leaky(configured, STDERR_SECRET)
    caplog.set_level("WARNING", logger="sources.stdio.stderr")

    sync(Source.objects.get())

    wait_until(lambda: "second line" in caplog.text, timeout=10, what="stderr")
    assert "stdio source leaky: starting with token ••••••" in caplog.text
    assert TOKEN not in caplog.text
    assert TOKEN not in capfd.readouterr().err  # the child's stderr is ours no more
