"""No upstream text carries a secret (issue 30, point 2): an upstream that echoes
the request's headers back, in its text, its structured content, its error
result, base64 or URL-encoded, or through an error the SDK raises, never gets a
header value into the answer, the audit rows, the CSV export or the log."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, quote_plus

import mcp_types as types
import pytest

from audit.models import AuditEvent
from tests.calls.conftest import link_source
from tests.upstream import Upstream, running_upstream, upstream_tool

URL = "/api/v1/tool-calls/execute"
TOKEN = "sk-live-4f9a2c7e1b8d6035"
USER, PASSWORD = "svc-quiver", "hunter2-but-longer"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
HEADERS = {"Authorization": f"Bearer {TOKEN}", "X-Upstream-Auth": BASIC}
STRUCTURED = {"type": "object", "properties": {"count": {"type": "integer"}}}


def echoes(headers: dict[str, str]) -> dict[str, str]:
    """Every spelling of the secrets an upstream might send back."""
    pair = f"{USER}:{PASSWORD}"
    dump = json.dumps({"authorization": headers.get("authorization", "")})
    return {
        "text": f"you sent Authorization: {headers.get('authorization')}",
        "token": f"token={TOKEN}",
        "basic": f"basic credentials {pair} (password {PASSWORD})",
        "base64": base64.b64encode(TOKEN.encode()).decode(),
        "base64_pair": base64.b64encode(pair.encode()).decode(),
        "base64_dump": base64.b64encode(dump.encode()).decode(),
        "base64_url": base64.urlsafe_b64encode(b"~" + TOKEN.encode()).decode(),
        "url": f"https://example.org/cb?auth={quote_plus('Bearer ' + TOKEN)}",
        "url_pair": quote(pair, safe=""),
        "json": json.dumps({"headers": headers}),
    }


class EchoingUpstream(Upstream):
    """``echo`` answers the request's headers in the form asked (``how``), as
    text, as structured content or as an error result; ``bad_echo`` answers
    structured content off its output schema holding the token, which the SDK
    refuses with an error quoting it."""

    async def on_call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        request = getattr(ctx, "request", None)
        headers = dict(request.headers) if request is not None else {}
        arguments = dict(params.arguments or {})
        if params.name == "bad_echo":
            return types.CallToolResult(
                content=[types.TextContent(text="x")],
                structured_content={"count": f"Bearer {TOKEN}"},
            )
        if params.name != "echo":
            return await super().on_call_tool(ctx, params)
        forms = echoes(headers)
        how = str(arguments.get("how", "text"))
        text = forms[how] if how in forms else " | ".join(forms.values())
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content={"echo": forms} if how == "structured" else None,
            is_error=how == "error",
        )


@pytest.fixture(scope="module")
def echoing() -> Iterator[Upstream]:
    upstream = EchoingUpstream()
    how = {"how": {"type": "string"}}
    upstream.tools["echo"] = upstream_tool("echo", "Echo.", how, read_only=True)
    upstream.tools["bad_echo"] = upstream_tool(
        "bad_echo", "Bad.", read_only=True, output_schema=STRUCTURED
    )
    with running_upstream(upstream) as running:
        yield running


@pytest.fixture
def agent(with_key: Any, echoing: Upstream, db: None) -> Any:
    echoing.required_headers = {"authorization": f"Bearer {TOKEN}"}
    link_source(echoing, name="echo", headers=HEADERS)
    return with_key("agent", "agent-echo")


def secrets_in(text: str) -> list[str]:
    """Which secret spellings ``text`` still holds."""
    pair = f"{USER}:{PASSWORD}"
    spelled = {TOKEN, PASSWORD, pair, BASIC.split()[1], quote(pair, safe="")}
    spelled.add(base64.b64encode(TOKEN.encode()).decode().rstrip("="))
    spelled.add(quote_plus(f"Bearer {TOKEN}"))
    for shift in range(3):  # the token's middle, wherever it starts in base64
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            spelled.add(encode(b"~" * shift + TOKEN.encode()).decode()[4:-4])
    return sorted(s for s in spelled if s in text)


def everything_kept(agent: Any) -> str:
    """The audit rows, the CSV export of them, as text."""
    rows = AuditEvent.objects.filter(event_type="tool_call")
    stored = json.dumps([[e.input, e.output, e.summary] for e in rows])
    export = agent.get("/api/v1/audit/export?format=csv")
    assert export.status_code == 200
    csv = b"".join(export.streaming_content).decode()
    assert "echo.echo" in csv
    return stored + csv


@pytest.mark.parametrize("how", ["text", "all", "structured", "error"])
def test_an_echoed_secret_never_reaches_the_answer_the_audit_or_the_log(
    agent, how, caplog, admin_user, as_user
):
    caplog.set_level(logging.DEBUG)
    response = agent.post(
        URL, {"name": "echo.echo", "arguments": {"how": how}}, format="json"
    )
    answer = response.json()
    assert answer["outcome"] == ("failed" if how == "error" else "ran"), answer
    assert "••••••" in json.dumps(answer, ensure_ascii=False)
    assert secrets_in(response.content.decode()) == []
    reader = as_user(admin_user)
    assert secrets_in(everything_kept(reader)) == []
    assert secrets_in(caplog.text) == []
    if how == "error":
        assert "••••••" in answer["reason"]


def test_an_sdk_error_quoting_the_upstreams_answer_is_scrubbed(agent, caplog):
    caplog.set_level(logging.DEBUG)
    response = agent.post(
        URL, {"name": "echo.bad_echo", "arguments": {}}, format="json"
    )
    answer = response.json()
    assert answer["outcome"] == "failed"
    assert secrets_in(response.content.decode()) == []
    assert secrets_in(caplog.text) == []
