"""Every refusal on /mcp is an audit row. A call the call path judged is its
``tool_call`` rows, written there, so REST and /mcp leave the same rows for the
same call; a call refused before the call path (malformed input: a bad or
unknown argument, an id that is no UUID; a catalog the key may not see; a name
in several catalogs), which over REST is a 4xx and no row, is over /mcp an
``mcp_refused`` row, never a call's; so is any other refusal once the key is
known (a search's or a details' argument, a method or body /mcp does not take, a
JSON-RPC request the SDK refuses). Refusals before the key is known have no
actor and no row.

A real gunicorn on the test database (its body limit lowered to reach it
cheaply) and a real upstream MCP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from audit.models import AuditEvent
from catalog.models import Catalog
from catalog.services.catalogs import create_catalog
from tests.conftest import worker_env
from tests.factories import make_client_key, make_tool
from tests.oauth_flow import agent_token
from tests.outages import running_web
from tests.upstream import Upstream

BODY_LIMIT = 65_536
FORECAST = "weather.get_forecast"
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    env = {**worker_env(), "QUIVER_MAX_BODY_BYTES": str(BODY_LIMIT)}
    with running_web(env, "mcp-refusals") as url:
        yield url


@pytest.fixture(params=["key", "token"])
def key(request: Any, upstream: Upstream, server_url: str) -> str:
    """A key of two catalogs; the third, ``secret``, is not its to see. Every
    test runs again with an OAuth access token of a person holding the same."""
    create_catalog("second", "Second", actor=None)
    create_catalog("secret", "Secret", actor=None)
    catalogs = ("default", "second")
    if request.param == "token":
        return agent_token(server_url, "refused-person", catalogs=catalogs)
    return make_client_key("agent-refused", "agent", catalogs=list(catalogs))


def send(url: str, key: str, body: dict[str, Any] | str, **headers: str) -> Any:
    return httpx.post(
        f"{url}/mcp",
        content=body if isinstance(body, str) else json.dumps(body),
        headers={"Authorization": f"Bearer {key}", **HEADERS, **headers},
        timeout=60,
    )


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}


def error_text(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


def only_row(kind: str) -> AuditEvent:
    rows = list(AuditEvent.objects.filter(event_type__in=["mcp_refused", "tool_call"]))
    assert [row.event_type for row in rows] == [kind], rows
    return rows[0]


def test_a_direct_call_of_a_name_in_several_catalogs_leaves_an_mcp_refused_row(
    server_url, upstream, key
):
    second = Catalog.objects.get(slug="second")
    make_tool(second, FORECAST, description="Another forecast.")
    text = error_text(send(server_url, key, call(FORECAST, {"city": "Nice"})))
    assert text == f"catalog: {FORECAST!r} is in several catalogs; name one"
    row = only_row("mcp_refused")
    assert row.output["refused"] == text
    assert row.output["field"] == "catalog"
    assert row.input["tool"] == FORECAST
    assert row.input["channel"] == "mcp"
    assert row.catalog_slug == ""  # no one catalog: readers of every catalog see it
    assert row.summary == f"{FORECAST} refused: {text}"
    assert upstream.calls == []


NOT_A_UUID = "not-a-uuid"
# A call refused before the call path judged it: (call_tool's arguments, the
# field named, REST's status).
UNJUDGED = [
    ({"name": FORECAST, "arguments": {}, "extra": 1}, "extra", 400),
    ({"name": FORECAST, "catalog": "secret"}, "catalog", 404),
    ({"name": FORECAST, "catalog": "Not A Slug"}, "catalog", 400),
    ({"name": FORECAST, "selection_id": NOT_A_UUID}, "selection_id", 400),
    ({"name": FORECAST, "arguments": {"city": "Nice"}, "approval_id": NOT_A_UUID},
     "approval_id", 400),
    ({"name": FORECAST, "approval_id": ""}, "approval_id", 400),
    ({"name": FORECAST, "arguments": []}, "arguments", 400),
    ({"name": FORECAST, "arguments": None}, "arguments", 400),
    ({"arguments": {"city": "Nice"}}, "name", 400),
    ({"name": ""}, "name", 400),
    ({"name": "x" * 201}, "name", 400),
]  # fmt: skip


def execute(url: str, key: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{url}/api/v1/tool-calls/execute",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )


def rows_after(after: int) -> list[tuple[str, str]]:
    kinds = ["mcp_refused", "tool_call"]
    found = AuditEvent.objects.filter(pk__gt=after, event_type__in=kinds)
    found = found.order_by("pk")
    return [(row.event_type, row.output.get("field", "")) for row in found]


def last_pk() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def test_a_call_refused_before_the_call_path_is_no_calls_row_on_either_path(
    server_url, upstream, key
):
    """Malformed input never reached a decision: REST answers a 4xx naming the
    field and writes nothing; /mcp answers a tool error naming it and records
    its refusal as the gateway's, never as a ``tool_call``."""
    for arguments, field, status in UNJUDGED:
        before = last_pk()
        rest = execute(server_url, key, arguments)
        assert rest.status_code == status, (arguments, rest.text)
        assert rest.json()["detail"].startswith(f"{field}: "), rest.text
        assert rows_after(before) == [], arguments
        text = error_text(send(server_url, key, call("call_tool", arguments)))
        assert text.startswith(f"{field}: "), (arguments, text)
        assert rows_after(before) == [("mcp_refused", field)], arguments
    assert upstream.calls == []


def test_a_direct_call_with_an_approval_id_that_is_no_uuid_is_no_calls_row(
    server_url, upstream, key
):
    for approval in (NOT_A_UUID, "", 7.5, ["x"]):
        before = last_pk()
        body = call(FORECAST, {"city": "Nice"})
        body["params"]["_meta"] = {"approval_id": approval}
        text = error_text(send(server_url, key, body))
        assert text.startswith("approval_id: "), (approval, text)
        assert rows_after(before) == [("mcp_refused", "approval_id")], approval
    assert upstream.calls == []


# A call the call path judged and refused: (call_tool's arguments, REST's status).
JUDGED = [
    ({"name": "weather.no_such", "arguments": {}}, 404),
    ({"name": FORECAST, "arguments": {"days": 3}}, 400),
]  # fmt: skip


def test_a_call_the_call_path_refuses_is_one_calls_row_on_either_path(
    server_url, upstream, key
):
    for arguments, status in JUDGED:
        before = last_pk()
        assert execute(server_url, key, arguments).status_code == status
        error_text(send(server_url, key, call("call_tool", arguments)))
        rows = AuditEvent.objects.filter(pk__gt=before, event_type="tool_call")
        rows = rows.order_by("pk")
        assert [row.input["channel"] for row in rows] == ["api", "mcp"], arguments
        assert {row.output["outcome"] for row in rows} == {"refused"}
        refused = AuditEvent.objects.filter(pk__gt=before, event_type="mcp_refused")
        assert not refused.exists()
    assert upstream.calls == []


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("search_tools", {"query": "x", "max_results": 0}, "max_results"),
        ("search_tools", {"query": "x", "colour": "red"}, "colour"),
        ("search_tools", {"query": "x", "catalog": "secret"}, "catalog"),
        ("search_tools", {}, "query"),
        ("get_tool_details", {"names": []}, "names"),
        ("get_tool_details", {"names": ["x"], "catalog": "secret"}, "catalog"),
        ("get_tool_details", {"names": ["x"], "colour": 1}, "colour"),
    ],
)
def test_a_refused_search_or_details_leaves_an_mcp_refused_row(
    server_url, upstream, key, tool, arguments, field
):
    text = error_text(send(server_url, key, call(tool, arguments)))
    assert text.startswith(f"{field}: ")
    row = only_row("mcp_refused")
    assert row.input["tool"] == tool
    assert row.input["method"] == "tools/call"
    assert row.output["refused"] == text
    assert row.output["field"] == field
    assert row.catalog_slug == ""
    assert row.input["arguments_hash"]
    assert not AuditEvent.objects.filter(event_type="selection").exists()


@pytest.mark.parametrize(
    ("body", "headers", "status", "code"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/nope", "params": {}}, {}, 200,
         -32601),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "search_tools", "arguments": "x"}}, {}, None, None),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
         {"Accept": "text/html"}, 406, None),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
         {"Content-Type": "text/plain"}, 415, None),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
         {"MCP-Protocol-Version": "1999-01-01"}, 400, None),
        ('{"jsonrpc": "2.0", "id": 1, "method": 7}', {}, 400, None),
    ],
    ids=["unknown-method", "arguments-not-an-object", "not-acceptable",
         "not-json", "unknown-version", "not-a-request"],
)  # fmt: skip
def test_a_request_the_sdk_refuses_leaves_an_mcp_refused_row(
    server_url, upstream, key, body, headers, status, code
):
    response = send(server_url, key, body, **headers)
    if status is not None:
        assert response.status_code == status, response.text
    assert "error" in response.json(), response.text
    row = only_row("mcp_refused")
    assert row.output["http_status"] == response.status_code
    if code is not None:
        assert row.output["code"] == code
    assert row.output["refused"]


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_a_method_mcp_does_not_take_leaves_a_row(server_url, upstream, key, method):
    response = httpx.request(
        method, f"{server_url}/mcp", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 405
    row = only_row("mcp_refused")
    assert (row.output["field"], row.output["http_status"]) == ("method", 405)


def test_a_body_past_the_limit_leaves_a_row(server_url, upstream, key):
    body = call("search_tools", {"query": "x" * BODY_LIMIT})
    response = send(server_url, key, body)
    assert response.status_code == 413
    assert response.json()["detail"].startswith("body: ")
    row = only_row("mcp_refused")
    assert (row.output["field"], row.output["http_status"]) == ("body", 413)


def test_refusals_before_the_key_is_known_leave_no_row(server_url, upstream, key):
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert send(server_url, "qv_nope_nope", ping).status_code == 401
    origin = send(server_url, key, ping, Origin="http://evil.example")
    assert origin.status_code == 403
    assert not AuditEvent.objects.filter(event_type="mcp_refused").exists()


def test_what_is_not_refused_leaves_no_refusal_row(server_url, upstream, key):
    listed = send(server_url, key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert listed.status_code == 200 and "result" in listed.json()
    ran = send(server_url, key, call(FORECAST, {"city": "Nice"}))
    assert ran.json()["result"]["isError"] is False, ran.text
    # A call that ran is its start and its outcome (calls.records), no refusal.
    rows = AuditEvent.objects.filter(event_type__in=["mcp_refused", "tool_call"])
    assert [(r.event_type, r.output["outcome"]) for r in rows.order_by("pk")] == [
        ("tool_call", "started"),
        ("tool_call", "ran"),
    ]
