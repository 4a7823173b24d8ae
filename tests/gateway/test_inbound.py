"""A /mcp body is read by the API's JSON rules before the MCP SDK sees it
(gateway.inbound): what breaks them is refused naming the field, a tool's own
arguments being the tool's to refuse."""

from __future__ import annotations

import json

import pytest

from config.jsonparse import BAD_TEXT_RULE, DUPLICATE_KEY_RULE, MAX_BODY_DEPTH
from gateway import inbound

BAD_TEXTS = ["a\\u0000b", "\\ud800", "x\\udfff", "\\udc00\\ud800"]


def tools_call(name: str, arguments: str, meta: str = "") -> bytes:
    extra = f', "_meta": {meta}' if meta else ""
    return (
        '{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": '
        f'{{"name": "{name}", "arguments": {arguments}{extra}}}}}'
    ).encode()


PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}'


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("bad", BAD_TEXTS)
@pytest.mark.parametrize(
    ("name", "arguments", "meta", "field"),
    [
        ("search_tools", '{"query": "BAD"}', "", "arguments.query"),
        ("search_tools", '{"messages": [{"role": "user", "content": "BAD"}]}', "",
         "arguments.messages[0].content"),
        ("get_tool_details", '{"names": ["ok", "BAD"]}', "", "arguments.names[1]"),
        ("call_tool", '{"name": "w.f", "arguments": {"city": "BAD"}}', "",
         "arguments.arguments.city"),
        ("w.f", '{"city": "BAD"}', "", "arguments.city"),
        ("w.f", '{"city": "x"}', '{"approval_id": "BAD"}', "_meta.approval_id"),
        ("BAD", "{}", "", "name"),
    ],
)  # fmt: skip
def test_bad_text_in_a_tool_call_is_the_tools_to_refuse(
    name, arguments, meta, field, bad
):
    body = tools_call(name, arguments.replace("BAD", bad), meta.replace("BAD", bad))
    checked = inbound.check(body.replace(b"BAD", bad.encode()))
    assert isinstance(checked, inbound.Inbound)
    assert checked.problem == inbound.Problem(field, BAD_TEXT_RULE)
    # What the SDK reads instead is plain, storable JSON (the bad text escaped).
    sent = json.loads(checked.body)
    assert "\\u" in json.dumps(sent, ensure_ascii=False)
    assert json.loads(checked.body)["id"] == 5


def test_a_key_with_bad_text_is_named_by_its_escaped_path():
    checked = inbound.check(tools_call("search_tools", '{"query": "x", "\\u0000": 1}'))
    assert isinstance(checked, inbound.Inbound)
    assert checked.problem == inbound.Problem("arguments.\\u0000", BAD_TEXT_RULE)


def test_a_repeated_argument_is_the_tools_to_refuse():
    body = tools_call("call_tool", '{"name": "w.f", "arguments": {"c": 1, "c": 2}}')
    checked = inbound.check(body)
    assert isinstance(checked, inbound.Inbound)
    assert checked.problem == inbound.Problem(
        "arguments.arguments.c", DUPLICATE_KEY_RULE
    )


@pytest.mark.parametrize(
    ("body", "code", "field", "rule"),
    [
        (nested(10_000).encode(), inbound.INVALID_REQUEST, "body",
         f"JSON nested deeper than {MAX_BODY_DEPTH} levels"),
        (tools_call("search_tools", '{"query": ' + nested(MAX_BODY_DEPTH) + "}"),
         inbound.INVALID_REQUEST, "body",
         f"JSON nested deeper than {MAX_BODY_DEPTH} levels"),
        (PING + b" \xff", inbound.PARSE_ERROR, "body",
         f"not valid UTF-8 text (byte {len(PING) + 1})"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": NaN}}',
         inbound.PARSE_ERROR, "body", "not valid JSON (NaN is not allowed)"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": 1'
         + b"0" * 5000 + b"}}", inbound.PARSE_ERROR, "body", None),
        (b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}',
         inbound.INVALID_REQUEST, "id", DUPLICATE_KEY_RULE),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
         b'{"clientInfo": {"name": "\\u0000"}}}', inbound.INVALID_PARAMS,
         "params.clientInfo.name", BAD_TEXT_RULE),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/\\ud800"}',
         inbound.INVALID_REQUEST, "method", BAD_TEXT_RULE),
    ],
)  # fmt: skip
def test_a_body_the_api_would_refuse_is_a_json_rpc_error_naming_the_field(
    body, code, field, rule
):
    checked = inbound.check(body)
    assert isinstance(checked, inbound.Rejected)
    assert checked.code == code
    assert checked.problem.field == field
    if rule is not None:
        assert checked.problem.rule == rule
    answer = json.loads(checked.answer())
    assert answer["error"]["code"] == code
    assert answer["error"]["message"].startswith(f"{field}: ")
    assert answer["error"]["data"] == {"field": field}


def test_a_rejected_request_keeps_its_id_when_it_has_one():
    body = (
        b'{"jsonrpc": "2.0", "id": "r-7", "method": "ping", "params": {"\\u0000": 1}}'
    )
    checked = inbound.check(body)
    assert isinstance(checked, inbound.Rejected)
    assert json.loads(checked.answer())["id"] == "r-7"
    assert inbound.check(nested(100).encode()).rpc_id is None  # unreadable: null


def test_the_depth_limit_is_the_apis():
    at_limit = tools_call("search_tools", '{"query": {"a": ' + nested(60) + "}}")
    checked = inbound.check(at_limit)
    assert isinstance(checked, inbound.Inbound)
    assert checked.body == at_limit and checked.problem is None


def test_a_clean_body_goes_to_the_sdk_as_it_came():
    body = tools_call("search_tools", '{"query": "weather in Paris"}')
    checked = inbound.check(body)
    assert checked == inbound.Inbound(body, "tools/call", "search_tools", None)


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', inbound.BATCH_RULE),
        (b"[]", inbound.BATCH_RULE),
        (b'"ping"', inbound.NOT_A_MESSAGE_RULE),
        (b"7", inbound.NOT_A_MESSAGE_RULE),
        (b"null", inbound.NOT_A_MESSAGE_RULE),
    ],
)
def test_a_batch_or_a_bare_value_is_refused_naming_the_body(body, rule):
    checked = inbound.check(body, "2025-06-18")
    assert isinstance(checked, inbound.Rejected)
    assert (checked.code, checked.problem) == (
        inbound.INVALID_REQUEST,
        inbound.Problem("body", rule),
    )
    assert "alidation error" not in checked.answer().decode()  # no parser's dump


@pytest.mark.parametrize(
    "version", ["2024-11-05", "2025-03-26", "1999-01-01", "2026-07-29", "", "latest"]
)
def test_a_version_header_not_served_is_the_specs_unsupported_version_error(version):
    checked = inbound.check(PING, version)
    assert isinstance(checked, inbound.Rejected)
    assert checked.code == inbound.UNSUPPORTED_VERSION == -32022
    answer = json.loads(checked.answer())
    assert answer["id"] == 1
    message = answer["error"]["message"]
    assert message.startswith(f"MCP-Protocol-Version: protocol version {version!r} ")
    assert "_meta" not in message
    assert "served: 2025-06-18, 2025-11-25 after initialize, 2026-07-28 per" in message
    # The per-request versions, as server/discover lists them.
    assert answer["error"]["data"] == {
        "field": "MCP-Protocol-Version",
        "supported": ["2026-07-28"],
        "requested": version,
    }


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28", None])
def test_a_version_served_or_none_goes_to_the_sdk(version):
    checked = inbound.check(PING, version)
    assert checked == inbound.Inbound(PING, "ping", "", None)


def initialize(version: str) -> bytes:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    return json.dumps(message).encode()


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
def test_an_initialize_asking_an_older_version_asks_the_newest_served(version):
    checked = inbound.check(initialize(version))
    assert isinstance(checked, inbound.Inbound)
    assert json.loads(checked.body) == json.loads(initialize("2025-11-25"))


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "1999-01-01"])
def test_an_initialize_asking_a_served_or_unknown_version_is_as_sent(version):
    """The SDK answers an unknown one with the newest it serves itself."""
    assert inbound.check(initialize(version)).body == initialize(version)
