"""The bridge's relay, against a scripted /mcp (httpx MockTransport): the headers
it sends, the answers it writes back, and every HTTP failure as a JSON-RPC error."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from quiver_client.bridge import Bridge, parse_event_stream, serve

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def scripted(
    answer: Callable[[httpx.Request], httpx.Response],
) -> tuple[Bridge, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(request)

    transport = httpx.MockTransport(handler)
    return Bridge("http://quiver.test/", "qv_k_s", transport=transport), seen


def echo_result(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    if "id" not in body:
        return httpx.Response(202)
    result: dict[str, Any] = {"echo": body["method"]}
    if body["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18"}
    return httpx.Response(
        200, json={"jsonrpc": "2.0", "id": body["id"], "result": result}
    )


def test_every_post_carries_the_key_the_content_type_and_both_accepts():
    bridge, seen = scripted(echo_result)
    bridge.relay(LIST)
    [request] = seen
    assert str(request.url) == "http://quiver.test/mcp"
    assert request.headers["Authorization"] == "Bearer qv_k_s"
    assert request.headers["Content-Type"] == "application/json"
    accept = request.headers["Accept"]
    assert "application/json" in accept and "text/event-stream" in accept
    assert "MCP-Protocol-Version" not in request.headers  # nothing negotiated yet


def test_the_version_initialize_negotiated_heads_every_later_request():
    bridge, seen = scripted(echo_result)
    bridge.relay(INIT)
    bridge.relay(LIST)
    bridge.relay({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert "MCP-Protocol-Version" not in seen[0].headers
    assert seen[1].headers["MCP-Protocol-Version"] == "2025-06-18"  # the server's
    assert seen[2].headers["MCP-Protocol-Version"] == "2025-06-18"


def test_a_2026_request_carries_its_own_version_method_and_name_headers():
    bridge, seen = scripted(echo_result)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {}, "_meta": meta},
    }
    bridge.relay(call)
    bridge.relay({**call, "params": {**call["params"], "name": "météo"}})
    first, accented = seen
    assert first.headers["MCP-Protocol-Version"] == "2026-07-28"
    assert first.headers["Mcp-Method"] == "tools/call"
    assert first.headers["Mcp-Name"] == "search_tools"
    assert accented.headers["Mcp-Name"].startswith("=?base64?")


def test_a_url_already_ending_in_mcp_is_not_doubled():
    assert Bridge("http://q.test/mcp/", "k").url == "http://q.test/mcp"


def test_an_event_stream_answer_is_unpacked_from_its_data_lines():
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
    result = {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}
    stream = (
        f"event: message\ndata: {json.dumps(progress)}\n\n"
        f"id: 7\ndata: {json.dumps(result)}\n\n"
    )
    bridge, _ = scripted(
        lambda r: httpx.Response(
            200, text=stream, headers={"content-type": "text/event-stream"}
        )
    )
    assert bridge.relay(LIST) == [progress, result]


def test_an_event_split_over_several_data_lines_is_one_message():
    assert parse_event_stream('data: {"a":\ndata: 1}\n\n: comment\n\n') == [{"a": 1}]


def test_a_notification_answered_202_writes_nothing():
    bridge, _ = scripted(echo_result)
    assert bridge.relay({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (401, {"detail": "revoked"}, "401 Unauthorized: revoked"),
        (421, {"detail": "Host: not allowed"}, "ALLOWED_HOSTS"),
        (403, {"detail": "Origin: not allowed"}, "403 Forbidden: Origin: not allowed"),
        (429, {"detail": "slow down"}, "rate limited"),
        (500, None, "500 Internal Server Error"),
        (503, None, "503 Service Unavailable"),
    ],
)  # fmt: skip
def test_an_http_failure_is_a_json_rpc_error_for_that_id(status, body, says):
    answer = (
        httpx.Response(status, json=body)
        if body
        else httpx.Response(status, text="<html>oops</html>")
    )
    bridge, _ = scripted(lambda r: answer)
    [error] = bridge.relay(LIST)
    assert error["jsonrpc"] == "2.0" and error["id"] == 2
    assert says in error["error"]["message"]
    assert error["error"]["data"]["status"] == status


def test_a_json_rpc_error_the_server_sends_with_a_4xx_is_relayed_as_is():
    rpc_error = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32600, "message": "no"}}
    bridge, _ = scripted(lambda r: httpx.Response(400, json=rpc_error))
    assert bridge.relay(LIST) == [rpc_error]


def test_a_timeout_and_a_refused_connection_are_errors_not_crashes():
    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused", request=request)

    [late] = scripted(timeout)[0].relay(LIST)
    [gone] = scripted(refused)[0].relay(LIST)
    assert "did not answer in time" in late["error"]["message"]
    assert "cannot reach Quiver at http://quiver.test/mcp" in gone["error"]["message"]


def test_a_batch_that_fails_answers_each_request_in_it_and_no_notification():
    bridge, _ = scripted(lambda r: httpx.Response(502))
    batch = [LIST, {**LIST, "id": 9}, {"jsonrpc": "2.0", "method": "notifications/x"}]
    assert [e["id"] for e in bridge.relay(batch)] == [2, 9]


def test_serve_writes_one_json_line_per_answer_and_survives_a_bug(monkeypatch):
    bridge, _ = scripted(echo_result)
    calls = {"n": 0}
    relay = bridge.relay

    def flaky(message: Any) -> list[Any]:
        calls["n"] += 1
        if message.get("id") == 5:
            raise RuntimeError("bug")
        return relay(message)

    monkeypatch.setattr(bridge, "relay", flaky)
    lines = [INIT, LIST, {**LIST, "id": 5}, [], 7]
    stdin = io.BytesIO(b"\n".join(json.dumps(m).encode() for m in lines) + b"\n")
    stdout = io.BytesIO()
    serve(bridge, stdin, stdout)
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    by_id = {a["id"]: a for a in answers if a["id"] is not None}
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[2]["result"] == {"echo": "tools/list"}
    assert by_id[5]["error"]["message"] == "quiver-mcp failed to relay this request"
    invalid = [a for a in answers if a["id"] is None]
    assert [a["error"]["code"] for a in invalid] == [-32600, -32600]
