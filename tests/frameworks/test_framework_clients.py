"""Below the agents: the plain mcp 1.x client the frameworks pin, and
quiver_client.langgraph's tool registry in the real LangChain, each a script of
scripts/ run in the frameworks' venv against gunicorn with a real upstream."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from calls.models import Approval
from catalog.services import ensure_default_catalog
from tests.factories import make_tool
from tests.frameworks.runner import Script, call_rows, events, run_script

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_plain_mcp1_client_calls_a_found_tool_in_one_exchange_after_the_cursor(
    live,
):
    """The SDK the frameworks pin: a found tool called by its own name costs a
    tools/list after every call, until the search's list_cursor page is listed."""
    out = run_script("plain_mcp1", live)
    report = json.loads(out.splitlines()[-1])
    assert report["name"] == "weather_get_forecast"
    assert report["without_cursor"] == ["tools/call", "tools/list"] * 2
    assert report["listed"][0] == "weather_get_forecast"
    assert report["with_cursor"] == ["tools/call", "tools/call"]
    cities = [result["city"] for result in report["results"]]
    assert cities == ["Lyon", "Nice", "Lyon", "Nice"]
    runs = call_rows()  # each call its start and its outcome
    assert [end.output["outcome"] for _, end in runs] == ["ran"] * 4
    assert len(events("tool_call")) == 2 * len(live.upstream.calls) == 8


def test_the_bigtool_registry_holds_what_the_key_may_see_and_carries_an_approval(
    live,
):
    make_tool(
        ensure_default_catalog(),
        "payroll.export",
        description="Export the payroll.",
        allowed_roles=["finance"],
    )
    script = Script("bigtool_registry", live)
    listed = json.loads(script.line())
    assert "payroll.export" not in listed["registry"]
    assert "weather.delete_file" in listed["registry"]
    assert "weather_delete_file" in listed["model_names"]
    assert listed["retrieved"][0] == "weather.delete_file"
    [selection] = events("selection")
    assert listed["offered"]["weather.delete_file"] == str(selection.selection_id)

    first = json.loads(script.line())["first"]
    assert first.startswith("pending_approval ")
    waiting = json.loads(script.line())["waiting"]
    assert waiting == "refused: approval_id: still waiting for a person"
    assert live.upstream.calls == []
    [pending] = Approval.objects.all()
    assert str(pending.pk) in first
    Approval.objects.filter(pk=pending.pk).update(
        status="approved", decided=timezone.now()
    )
    script.send("approved")
    again = json.loads(script.line())["again"]
    used = json.loads(script.line())["used"]
    refused = json.loads(script.line())["refused"]
    script.finish()

    assert again.startswith("delete_file done: "), again
    assert used.startswith("pending_approval "), used  # a new approval, not reused
    assert [call.name for call in live.upstream.calls] == ["delete_file"]
    assert refused.startswith("refused: arguments/path: "), refused
    calls = events("tool_call")
    outcomes = [row.output["outcome"] for row in calls]
    assert outcomes == ["pending", "refused", "started", "ran", "pending", "refused"]
    approvals = [row.input.get("approval_id") for row in calls[1:4]]
    assert approvals == [str(pending.pk)] * 3
    assert calls[0].input["selection_id"] == str(selection.selection_id)
    assert Approval.objects.count() == 2
