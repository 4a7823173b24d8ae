"""A /mcp body read by the API's own JSON rules before the MCP SDK sees it.

The SDK's parser takes deeper nesting than the API does, lets a repeated key's last
value win and hands a NUL on to the database, so the body is first read here as
``config.jsonparse`` reads every API body: a body it refuses, a batch, or a protocol
version /mcp does not serve is refused naming the field and the rule before any MCP
work. Pure functions: no Django, no database.
The rules: docs/explanation/security.md, MCP endpoint and Input rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    is_version_at_least,
)

from config.jsonparse import (
    BAD_TEXT_RULE,
    DUPLICATE_KEY_RULE,
    DuplicateKey,
    JSONTooDeep,
    find_bad_text,
    loads,
    loads_unique,
    printable,
    printable_tree,
)

# JSON-RPC 2.0's error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
# The 2026-07-28 specification's code for a protocol version the server does
# not speak (data: the versions it does, and the one asked for).
UNSUPPORTED_VERSION = -32022
VERSION_HEADER = "MCP-Protocol-Version"
# Handshake versions from 2025-06-18 on: one message per request, the version
# header on every request after initialize. 2024-11-05 (HTTP+SSE transport) and
# 2025-03-26 (batches) are not served (docs/reference/mcp.md says why).
HANDSHAKE_SERVED = tuple(
    version
    for version in HANDSHAKE_PROTOCOL_VERSIONS
    if is_version_at_least(version, "2025-06-18")
)
SERVED_VERSIONS = (*HANDSHAKE_SERVED, *MODERN_PROTOCOL_VERSIONS)
BATCH_RULE = (
    "a JSON-RPC batch (an array) is not served: send one message per request "
    "(MCP 2025-06-18 removed batching; 2025-03-26 is not served)"
)
NOT_A_MESSAGE_RULE = "must be one JSON-RPC message (a JSON object)"
# The parts of a tools/call whose problems are its tool's to answer.
TOOL_PARTS = ("arguments", "name", "_meta")
NAME_CHARS = 200


@dataclass(frozen=True)
class Problem:
    """A field and the rule it breaks: ``field: rule`` is what the caller reads."""

    field: str
    rule: str

    def __str__(self) -> str:
        return f"{self.field}: {self.rule}"


@dataclass(frozen=True)
class Inbound:
    """A body for the SDK, what it asks, and a tool argument's problem, if any."""

    body: bytes
    method: str = ""
    tool: str = ""
    problem: Problem | None = None


@dataclass(frozen=True)
class Rejected:
    """A body refused before the SDK: answered as a JSON-RPC error."""

    code: int
    problem: Problem
    rpc_id: str | int | None = None
    method: str = ""
    tool: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def answer(self) -> bytes:
        error = {
            "code": self.code,
            "message": str(self.problem),
            "data": {"field": self.problem.field, **self.data},
        }
        answer = {"jsonrpc": "2.0", "id": self.rpc_id, "error": error}
        return json.dumps(answer).encode()


def check(body: bytes, version: str | None = None) -> Inbound | Rejected:
    """Read ``body`` (sent with ``version`` in its ``MCP-Protocol-Version``
    header, if any) as the API reads JSON; see the module's docstring."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        rule = f"not valid UTF-8 text (byte {exc.start})"
        return Rejected(PARSE_ERROR, Problem("body", rule))
    if not text.strip():
        return Inbound(body)  # the SDK answers an empty body itself
    repeated = ""
    try:
        data = loads_unique(text)
    except DuplicateKey as exc:
        repeated, data = exc.path, loads(text)  # the depth is known to be fine
    except JSONTooDeep as exc:
        return Rejected(INVALID_REQUEST, Problem("body", str(exc)))
    except ValueError as exc:
        return Rejected(PARSE_ERROR, Problem("body", f"not valid JSON ({exc})"))
    if not isinstance(data, dict):
        rule = BATCH_RULE if isinstance(data, list) else NOT_A_MESSAGE_RULE
        return Rejected(INVALID_REQUEST, Problem("body", rule))
    if version is not None and version not in SERVED_VERSIONS:
        return _unsupported(data, version)
    return _checked(_negotiated(body, data), data, repeated)


def _unsupported(data: dict[str, Any], version: str) -> Rejected:
    """The specification's answer to a version header the server does not speak:
    ``data.supported`` lists the per-request versions, as ``server/discover``
    does (what a client may send again in that envelope); the message names
    the handshake versions too."""
    asked = printable(version)[:100]
    rule = (
        f"protocol version {asked!r} is not supported (served: "
        f"{', '.join(HANDSHAKE_SERVED)} after initialize, "
        f"{', '.join(MODERN_PROTOCOL_VERSIONS)} per request)"
    )
    method = _text(data.get("method"), 100)
    return Rejected(
        UNSUPPORTED_VERSION,
        Problem(VERSION_HEADER, rule),
        _rpc_id(data.get("id")),
        method,
        data={"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": asked},
    )


def _negotiated(body: bytes, data: dict[str, Any]) -> bytes:
    """An ``initialize`` asking for a handshake version older than those served,
    asking for the newest served instead: the SDK answers with it, as the
    specification's negotiation has a server answer a version it supports,
    which the client takes or leaves."""
    params = data.get("params")
    if data.get("method") != "initialize" or not isinstance(params, dict):
        return body
    asked = params.get("protocolVersion")
    if asked not in HANDSHAKE_PROTOCOL_VERSIONS or asked in HANDSHAKE_SERVED:
        return body
    data["params"] = {**params, "protocolVersion": HANDSHAKE_SERVED[-1]}
    return json.dumps(data).encode()


def _checked(body: bytes, data: dict[str, Any], repeated: str) -> Inbound | Rejected:
    method = _text(data.get("method"), 100)
    params = data.get("params")
    tool = ""
    if method == "tools/call" and isinstance(params, dict):
        tool = _text(params.get("name"), NAME_CHARS)
    if repeated:
        problem = Problem(repeated, DUPLICATE_KEY_RULE)
    else:
        path = find_bad_text(data)
        if path is None:
            return Inbound(body, method, tool)
        problem = Problem(path, BAD_TEXT_RULE)
    field = _tool_field(problem.field) if method == "tools/call" else None
    if field is not None:
        clean = json.dumps(printable_tree(data)).encode()
        return Inbound(clean, method, tool, Problem(field, problem.rule))
    code = INVALID_PARAMS if problem.field.startswith("params") else INVALID_REQUEST
    return Rejected(code, problem, _rpc_id(data.get("id")), method, tool)


def _tool_field(path: str) -> str | None:
    """A tools/call problem's path within its params (``arguments.city``), or
    None when it lies outside the tool's part of the message."""
    within = path.removeprefix("params.")
    if within == path:
        return None
    head = within.split(".", 1)[0].split("[", 1)[0]
    return within if head in TOOL_PARTS else None


def _rpc_id(value: Any) -> str | int | None:
    """The request's id, when it is one JSON-RPC allows (else the error's null)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return printable(value) if isinstance(value, str) else value


def _text(value: Any, limit: int) -> str:
    return printable(value)[:limit] if isinstance(value, str) else ""
