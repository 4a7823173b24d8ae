"""An upstream built with the MCP SDK 2.x (tests/upstream.py) that asks its
client something in the middle of a call (sampling, elicitation, roots): Quiver
speaks the 2026-07-28 protocol to it, where a server has no channel back to the
client for a request, so the server's SDK refuses to send it and the call fails
naming the request, audited, never a 500 and never a wait. (A handshake-era
server that sends one anyway: tests/servers, asking_server.mjs.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from audit.models import AuditEvent
from tests.calls.conftest import link_source
from tests.upstream import ASKS_THE_CLIENT, Upstream, upstream_tool

URL = "/api/v1/tool-calls/execute"
ASKED = {
    "asks_sampling": "sampling/createMessage",
    "asks_elicitation": "elicitation/create",
    "asks_roots": "roots/list",
}


@pytest.fixture
def asking(upstream: Upstream, db: None) -> Iterator[Upstream]:
    for name in ASKS_THE_CLIENT:
        upstream.tools[name] = upstream_tool(
            name, f"Asks {ASKED[name]}.", read_only=True
        )
    try:
        link_source(upstream, name="asker")
        yield upstream
    finally:
        for name in ASKS_THE_CLIENT:
            del upstream.tools[name]


# The upstream means to ask what 2026-07-28 deprecates (SEP-2577).
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_request_back_to_quiver_fails_the_call_naming_it(
    with_key: Any, asking: Upstream
) -> None:
    agent = with_key("agent", "agent-asked")
    for tool, method in ASKED.items():
        answer = agent.post(
            URL, {"name": f"asker.{tool}", "arguments": {}}, format="json"
        )

        assert answer.status_code == 200, answer.json()
        body = answer.json()
        assert body["outcome"] == "failed" and body["is_error"] is True
        assert f"Cannot send '{method}'" in body["reason"]
        assert body["reason"].startswith("source 'asker': ")
    outcomes = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    assert [e.output["outcome"] for e in outcomes] == ["started", "failed"] * 3
    assert [call.name for call in asking.calls] == list(ASKED)
