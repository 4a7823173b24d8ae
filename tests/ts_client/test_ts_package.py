"""The TypeScript package (clients/ts) end to end: node's test runner runs its
compiled tests (``make ts`` builds them; ``make pytest`` does first) against a
live Quiver served as ``make run`` serves it (gunicorn: the API and /mcp) on the
test database (through a proxy a test may break, tests/outages.py), with a real
upstream MCP server as the catalog's source. Each node test file writes what it
did to a report; this side checks it against the audit log and the upstream."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from audit.models import AuditEvent
from calls.models import Approval
from calls.upstream import pool
from catalog.models import Tool
from catalog.services import ensure_default_catalog
from config.devstack_demo import demo_sources_file
from selection.services.settings import update_selection_settings
from tests.calls.approval_rows import restore_approver_groups
from tests.calls.conftest import link_source
from tests.conftest import worker_env
from tests.demo import demo_stack
from tests.docs.shown import check_shown
from tests.factories import embed_now, make_client_key, make_tool, make_user
from tests.outages import web_behind_proxy
from tests.upstream import Upstream
from tests.vault.rows import make_personal_source

ROOT = Path(__file__).resolve().parents[2]
TS = ROOT / "clients" / "ts"
DIST = TS / "dist"
NODE = shutil.which("node") or "node"
TRANSITIONS = {"weather.get_forecast": {"weather.set_thermostat": 0.9}}

# Every test transactional, so pytest-django keeps the module's tests together
# and one xdist process runs them all with one gunicorn (tests/scheduling.py).
pytestmark = pytest.mark.django_db(transaction=True)


@dataclass
class Live:
    url: str
    upstream: Upstream
    env: dict[str, str]


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the demo stack's settings file is (make run's state directory)."""
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="module")
def web(
    django_db_setup: None, django_db_blocker: Any, demo_dir: Path
) -> Iterator[tuple[str, Any]]:
    """One gunicorn for the module, on the test database through a proxy; the
    demo server is in its settings file, as make run's is."""
    env = worker_env()
    demo_sources_file(demo_dir, env, ROOT)
    with web_behind_proxy(env, "ts") as found:
        yield found


@pytest.fixture(scope="module")
def server_url(web: tuple[str, Any]) -> str:
    return web[0]


@pytest.fixture
def live(transactional_db: None, server_url: str, module_upstream: Upstream) -> Live:
    """The default catalog: the upstream's tools as ``weather.*`` (read-only
    ones run at once, the others wait for approval), a tool of a role the keys
    lack, the ensemble scorer with a curator's transition; an approver's
    session for the node side to decide approvals with."""
    module_upstream.calls.clear()
    catalog = ensure_default_catalog()
    link_source(module_upstream)
    make_tool(
        catalog,
        "hidden_refund",
        description="Refund a customer's card payment.",
        allowed_roles=["finance"],
    )
    update_selection_settings(
        catalog,
        {"default_scorer": "ensemble", "transitions": TRANSITIONS},
        actor=None,
    )
    embed_now(catalog)
    env = {"QUIVER_URL": server_url, "QUIVER_APPROVER_SESSION": approver_session()}
    return Live(server_url, module_upstream, env)


def approver_session() -> str:
    """The session cookie of a person in the approver group."""
    restore_approver_groups()
    browser = Client()
    browser.force_login(make_user("ann", groups=("approver",)))
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={browser.cookies[name].value}"


def run_node(name: str, env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    """``node --test`` of one compiled test file; its report, once it passed."""
    script = DIST / "test" / f"{name}.test.js"
    assert script.exists(), f"{script} is missing: `make ts` builds clients/ts"
    report = tmp_path / f"{name}.json"
    done = subprocess.run(
        [NODE, "--test", "--test-reporter=spec", str(script)],
        cwd=TS,
        env={**os.environ, **env, "QUIVER_TS_REPORT": str(report)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-4000:]
    assert re.search(r"^ℹ fail 0$", done.stdout, re.M), done.stdout[-2000:]
    return json.loads(report.read_text()) if report.exists() else {}


def events(kind: str, actor: str) -> list[AuditEvent]:
    rows = AuditEvent.objects.filter(event_type=kind, actor_name__contains=actor)
    return list(rows.order_by("pk"))


def by_call(rows: list[AuditEvent]) -> dict[str, AuditEvent]:
    """Each call's last row by its ``call_id``: the outcome of a call that
    reached its upstream (naming its ``started`` event's id, the call_id), or
    the one row of a refused or pending call (calls.records)."""
    found = {}
    for row in rows:
        if row.output.get("outcome") != "started":
            found[str(row.input.get("call_id") or row.pk)] = row
    return found


def test_the_packages_own_parts_pass_without_a_server(tmp_path):
    run_node("units", {}, tmp_path)


def test_the_client_speaks_the_api_against_a_live_quiver(live, tmp_path):
    make_personal_source(ensure_default_catalog())  # its call needs authorization
    key = make_client_key("ts-client", "agent")
    limited = make_client_key("ts-limited", "agent", rate_limit_per_minute=1)
    env = {**live.env, "QUIVER_API_KEY": key, "QUIVER_LIMITED_KEY": limited}
    report = run_node("client", env, tmp_path)

    calls = by_call(events("tool_call", "ts-client"))
    ran, pending, approved = (calls[call_id] for call_id in report["calls"])
    needs = [e for e in calls.values() if e.output["outcome"] == "needs_authorization"]
    assert [e.input["tool"] for e in needs] == ["notes.whoami"]
    assert ran.output["outcome"] == "ran"
    assert pending.output["outcome"] == "pending"
    assert approved.output["outcome"] == "ran"
    assert approved.input["approval_id"] == pending.input["approval_id"]
    [approval] = Approval.objects.all()
    assert (approval.status, approval.decider_name) == ("used", "ann")
    names = [call.name for call in live.upstream.calls]
    # the approved deletion ran exactly once; refusals never reached the upstream
    assert names.count("delete_file") == 1
    assert names.count("get_forecast") == 1


def test_an_ai_sdk_agent_selects_each_step_and_calls_through_quiver(live, tmp_path):
    key = make_client_key("ts-agent", "agent")
    report = run_node("agent", {**live.env, "QUIVER_API_KEY": key}, tmp_path)

    # One selection per step: the agent's four, plus the one prepareStep of
    # the test that calls outside its selection.
    selections = events("selection", "ts-agent")
    assert len(selections) == 5
    by_id = {str(row.selection_id): row for row in selections}
    steps = [by_id[selection_id] for selection_id in report["selections"]]
    assert [row.pk for row in steps] == sorted(row.pk for row in steps)
    first, second = (row.input["request"]["messages"] for row in steps[:2])
    assert first[-1]["content"].startswith("What is the weather forecast for Paris?")
    called = second[-1]["tool_calls"][0]["function"]["name"]
    assert called == "weather.get_forecast"  # the catalog name, not the provider's

    # Five calls: the agent's three, each linked to its step's selection, and
    # the two refusals of the other tests (a call that ran is two rows).
    by_pk = by_call(events("tool_call", "ts-agent"))
    calls = list(by_pk.values())
    assert len(calls) == 5
    agent_calls = [by_pk[call_id] for call_id in report["calls"]]
    assert [row.output["outcome"] for row in agent_calls] == ["ran", "pending", "ran"]
    assert [row.input["selection_id"] for row in agent_calls] == report[
        "call_selections"
    ]
    assert agent_calls[2].input["approval_id"] == report["approval_id"]
    refused = [row for row in calls if row.output["outcome"] == "refused"]
    assert len(refused) == 2
    assert [call.name for call in live.upstream.calls] == [
        "get_forecast",
        "set_thermostat",
    ]
    [validation] = events("validation", "ts-agent")
    assert str(validation.request_id) == report["validation_id"]
    assert validation.input["selection_id"] == report["selections"][0]


def test_quiver_tools_wait_for_approval_run_once_and_never_reuse_it(live, tmp_path):
    key = make_client_key("ts-approvals", "agent")
    report = run_node("approvals", {**live.env, "QUIVER_API_KEY": key}, tmp_path)

    calls = by_call(events("tool_call", "ts-approvals"))
    assert list(calls) == report["calls"]
    assert [row.output["outcome"] for row in calls.values()] == [
        "pending",
        "refused",  # re-sent while its approval was pending
        "pending",
        "denied",
        "pending",
        "ran",
        "pending",
    ]
    asked, other, anew, once = report["approvals"]
    statuses = dict(Approval.objects.values_list("id", "status"))
    assert {str(pk): status for pk, status in statuses.items()} == {
        asked: "used",
        other: "denied",
        anew: "pending",
        once: "pending",
    }
    ran = [call for call in live.upstream.calls if call.name == "set_thermostat"]
    assert [call.arguments for call in ran] == [{"celsius": 21}]


def test_wait_for_approval_resolves_to_the_decision(live, tmp_path):
    key = make_client_key("ts-wait", "agent")
    report = run_node("wait", {**live.env, "QUIVER_API_KEY": key}, tmp_path)

    statuses = dict(Approval.objects.values_list("id", "status"))
    assert {str(pk): status for pk, status in statuses.items()} == {
        report["approved"]: "used",
        report["denied"]: "denied",
    }
    ran = [call for call in live.upstream.calls if call.name == "set_thermostat"]
    assert [call.arguments for call in ran] == [{"celsius": 19}]


def test_the_typescript_mcp_sdks_search_and_call_through_mcp_in_both_eras(
    live, tmp_path
):
    key = make_client_key("ts-mcp", "agent")
    report = run_node("mcp", {**live.env, "QUIVER_API_KEY": key}, tmp_path)

    assert report["eras"]["@modelcontextprotocol/client v2, auto"] == "2026-07-28"
    selections = events("selection", "ts-mcp")
    assert [str(row.selection_id) for row in selections] == report["selections"]
    assert {row.input["channel"] for row in selections} == {"mcp"}
    calls = by_call(events("tool_call", "ts-mcp"))
    assert list(calls) == report["calls"]
    assert {
        (row.input["channel"], row.output["outcome"]) for row in calls.values()
    } == {("mcp", "ran")}
    assert len(live.upstream.calls) == 6


def test_a_call_that_ran_is_never_sent_again_and_a_retryable_one_is(
    live, web, tmp_path
):
    """The upstream counts its sends. A non-idempotent tool that runs without
    approval: the database drops its sessions while it runs, so its outcome
    cannot be recorded (503, not retryable): the client sends it once. Then the
    database refuses connections for a moment: the first attempt does nothing
    (503, retryable, Retry-After): the client waits it out and the call runs."""
    _, proxy = web
    Tool.objects.filter(name="weather.send_note").update(requires_approval=False)
    env = {**live.env, "QUIVER_API_KEY": make_client_key("ts-once", "agent")}
    live.upstream.on_call["send_note"] = proxy.sever
    try:
        once = run_node("runs-once", env, tmp_path)
    finally:
        live.upstream.on_call.clear()
    assert once["sent"] == 1
    assert [call.name for call in live.upstream.calls] == ["send_note"]
    [started] = AuditEvent.objects.calls_without_outcome()
    assert f"call_id {started.pk}" in once["detail"]

    proxy.sever(refuse_s=2.0)
    retried = run_node("retried", env, tmp_path)
    assert retried["statuses"] == [503, 200]
    names = [call.name for call in live.upstream.calls]
    assert names == ["send_note", "get_forecast"]


def test_the_example_runs_an_agent_against_quiver(live):
    key = make_client_key("ts-example", "agent")
    done = run_example({**live.env, "QUIVER_API_KEY": key})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("step 0: Quiver offered weather_get_forecast")
    assert "the model called weather_get_forecast: ran " in lines
    assert lines[-1].startswith("the answer: Here is what I found:")
    assert len(events("selection", "ts-example")) == 2


def test_the_example_against_make_runs_demo_prints_what_the_tutorial_shows(
    transactional_db, server_url, demo_dir, settings, monkeypatch
):
    demo_stack(demo_dir, settings, monkeypatch)
    key = make_client_key("my-agent", "agent", roles=["support"])
    try:
        done = run_example({"QUIVER_URL": server_url, "QUIVER_API_KEY": key})
    finally:
        work = pool()
        work.submit(work.close_all(), 10)  # the demo server this process started
    assert done.returncode == 0, done.stdout + done.stderr
    check_shown("docs/tutorials/connect-typescript.md", "ts-agent", done.stdout)


def test_the_example_without_a_key_says_how_to_make_one():
    done = run_example({"QUIVER_URL": "http://127.0.0.1:9", "QUIVER_API_KEY": ""})
    assert done.returncode == 2
    assert "QUIVER_API_KEY" in done.stdout


def test_the_docs_show_the_lines_the_example_runs():
    page = (ROOT / "docs" / "tutorials" / "connect-typescript.md").read_text()
    [snippet] = re.findall(r"```ts\n(.*?)```", page, re.S)
    example = (TS / "examples" / "agent.ts").read_text()
    shown = [line.strip() for line in snippet.splitlines() if line.strip()]
    assert shown
    missing = [line for line in shown if line not in example]
    assert missing == [], "lines the docs show that the example does not run"


def run_example(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = DIST / "examples" / "agent.js"
    assert script.exists(), f"{script} is missing: `make ts` builds clients/ts"
    return subprocess.run(
        [NODE, str(script)],
        cwd=TS,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
