"""A tool that takes no arguments and needs approval (what a sync makes of an
upstream tool with no parameters and no ``readOnlyHint``) is called with ``{}``:
asked, approved by a person and run once, never refused for its empty arguments.
POST /api/v1/tool-calls/execute against a real upstream MCP server; the same
over /mcp is in tests/gateway/test_mcp_calls.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from audit.models import AuditEvent
from calls.decisions import approve
from calls.models import Approval
from tests.calls.approval_rows import restore_approver_groups
from tests.calls.conftest import link_source
from tests.factories import make_user
from tests.upstream import Upstream, upstream_tool

URL = "/api/v1/tool-calls/execute"
BELL = "office.ring_bell"


@pytest.fixture
def bell(upstream: Upstream, db: None) -> Iterator[Upstream]:
    """The upstream with a tool of no parameters and no hints, synced as such."""
    upstream.tools["ring_bell"] = upstream_tool("ring_bell", "Ring the office bell.")
    try:
        tools = link_source(upstream, name="office")
        assert tools["ring_bell"].requires_approval  # no readOnlyHint: a person asks
        yield upstream
    finally:
        del upstream.tools["ring_bell"]


@pytest.fixture
def agent(with_key: Any) -> Any:
    return with_key("agent", "agent-bell", allow_unsafe=True)


def approver() -> Any:
    restore_approver_groups()
    return make_user("ann", groups=("approver",))


@pytest.mark.parametrize("sent", [{"name": BELL, "arguments": {}}, {"name": BELL}])
def test_a_tool_of_no_arguments_is_asked_approved_and_run_once(agent, bell, sent):
    asked = agent.post(URL, sent, format="json")
    assert asked.status_code == 202, asked.json()
    approval = Approval.objects.get(pk=asked.json()["approval_id"])
    assert approval.arguments == {}
    approve(approval, person=approver(), reason="ring it")
    ran = agent.post(URL, {**sent, "approval_id": str(approval.pk)}, format="json")
    assert ran.status_code == 200, ran.json()
    assert ran.json()["outcome"] == "ran"
    assert [(call.name, call.arguments) for call in bell.calls] == [("ring_bell", {})]
    outcomes = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    assert [row.output["outcome"] for row in outcomes] == ["pending", "started", "ran"]
    again = agent.post(URL, {**sent, "approval_id": str(approval.pk)}, format="json")
    assert again.status_code == 409  # used: never a second run
    assert len(bell.calls) == 1
