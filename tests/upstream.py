"""A real upstream MCP server for the sources, calls and approvals tests, built with
the official SDK (its low-level ``Server`` and streamable HTTP session manager) and
served by uvicorn on 127.0.0.1 in a thread of the test process.

Everything a test needs to see or change is on the ``Upstream`` object: the tools it
lists (a dict, changed between syncs), the page size of ``tools/list``, the headers
it requires, and every call that reached it (so a test can assert that an invalid
or unapproved call never did).

    with running_upstream() as upstream:
        upstream.url            # http://127.0.0.1:<port>/mcp
        upstream.calls          # [UpstreamCall(name, arguments, headers), ...]
        upstream.tools["new_tool"] = upstream_tool("new_tool", "...")
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

OBJECT = {"type": "object"}


def upstream_tool(
    name: str,
    description: str,
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
    *,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    output_schema: dict[str, Any] | None = None,
    title: str | None = None,
) -> types.Tool:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    hints: dict[str, Any] = {
        "read_only_hint": read_only,
        "destructive_hint": destructive,
        "idempotent_hint": idempotent,
        "open_world_hint": open_world,
    }
    annotations = (
        types.ToolAnnotations(**hints)
        if any(value is not None for value in hints.values())
        else None
    )
    return types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=schema,
        output_schema=output_schema,
        annotations=annotations,
    )


def default_tools() -> dict[str, types.Tool]:
    """Read-only, destructive, idempotent, open-world, slow, failing and big tools."""
    city = {"city": {"type": "string", "minLength": 1}}
    tools = [
        upstream_tool(
            "get_forecast",
            "Weather forecast for a city: temperature and sky for the next days.",
            {**city, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
            ["city"],
            read_only=True,
            open_world=True,
            output_schema={
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "forecast": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["city", "forecast"],
            },
        ),
        upstream_tool(
            "delete_file",
            "Delete a file from the shared drive, permanently.",
            {"path": {"type": "string", "minLength": 1}},
            ["path"],
            read_only=False,
            destructive=True,
            open_world=False,
        ),
        upstream_tool(
            "set_thermostat",
            "Set the office thermostat to a temperature in degrees Celsius.",
            {"celsius": {"type": "number", "minimum": 5, "maximum": 30}},
            ["celsius"],
            read_only=False,
            destructive=False,
            idempotent=True,
            open_world=False,
        ),
        upstream_tool(
            "send_note",
            "Send a short note to a colleague by chat.",
            {"to": {"type": "string"}, "text": {"type": "string"}},
            ["to", "text"],
        ),  # no annotations: the spec's defaults (not read-only, destructive)
        upstream_tool(
            "slow_echo",
            "Echo a text back after waiting some seconds.",
            {"text": {"type": "string"}, "seconds": {"type": "number"}},
            ["text"],
            read_only=True,
        ),
        upstream_tool(
            "always_fails",
            "A tool whose every call fails upstream.",
            read_only=True,
        ),
        upstream_tool(
            "big_result",
            "Answer a text of the given number of bytes.",
            {"size": {"type": "integer", "minimum": 0}},
            ["size"],
            read_only=True,
        ),
    ]
    return {tool.name: tool for tool in tools}


@dataclass
class UpstreamCall:
    name: str
    arguments: dict[str, Any]
    headers: dict[str, str]
    # The request's _meta as it arrived (the W3C traceparent, when traced).
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Upstream:
    url: str = ""
    tools: dict[str, types.Tool] = field(default_factory=default_tools)
    page_size: int = 3
    # Header name (lower case) -> the value every request must carry, else 401.
    required_headers: dict[str, str] = field(default_factory=dict)
    calls: list[UpstreamCall] = field(default_factory=list)
    list_requests: int = 0
    # Every HTTP request's headers, lower-cased names (to check secrets were sent).
    seen_headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # A tools/call of "flood" is answered by the HTTP layer itself, streaming a
    # text result of this many bytes in 1 MiB chunks (never held whole), as JSON
    # or as one server-sent event (flood_as), optionally labelled gzip.
    flood_bytes: int = 0
    flood_as: str = "json"
    flood_encoding: str = ""
    flood_sent: list[int] = field(default_factory=list)
    # With flood_bytes, a tools/list is flooded too: one tool whose description
    # is flood_bytes of "x".
    flood_list: bool = False
    # A server of the handshake era only: ``server/discover`` (the 2026-07-28
    # probe) is an unknown method, so a client in "auto" mode falls back.
    handshake_only: bool = False
    # Tool name -> what a test does when a call of it arrives, before it is
    # answered (e.g. break the caller's database connections mid-call).
    on_call: dict[str, Callable[[], None]] = field(default_factory=dict)

    async def on_list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        with self.lock:
            self.list_requests += 1
            tools = list(self.tools.values())
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        return types.ListToolsResult(
            tools=tools[start:end],
            next_cursor=str(end) if end < len(tools) else None,
        )

    async def on_call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        request = getattr(ctx, "request", None)
        headers = dict(request.headers) if request is not None else {}
        meta = dict(params.meta or {})
        with self.lock:
            self.calls.append(UpstreamCall(params.name, arguments, headers, meta))
            hook = self.on_call.get(params.name)
        if hook is not None:
            hook()
        if params.name in ASKS_THE_CLIENT:  # added by a test: a request back
            return await _ask_the_client(ctx, params.name)
        return await self._answer(params.name, arguments)

    async def _answer(
        self, name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        if name == "get_forecast":
            days = int(arguments.get("days", 2))
            forecast = [f"day {n + 1}: sunny, 21 C" for n in range(days)]
            found = {"city": arguments["city"], "forecast": forecast}
            return types.CallToolResult(
                content=[types.TextContent(text="\n".join(forecast))],
                structured_content=found,
            )
        if name == "slow_echo":
            await anyio.sleep(float(arguments.get("seconds", 0)))
            return _text(str(arguments["text"]))
        if name == "always_fails":
            return types.CallToolResult(
                content=[types.TextContent(text="upstream: the disk is on fire")],
                is_error=True,
            )
        if name == "big_result":
            return _text("x" * int(arguments["size"]))
        if name == "structured_only":  # added by a test: no content block at all
            return types.CallToolResult(content=[], structured_content={"ok": True})
        if name in self.tools:
            return _text(f"{name} done: {arguments}")
        return types.CallToolResult(
            content=[types.TextContent(text=f"unknown tool {name}")], is_error=True
        )

    def calls_to(self, name: str) -> list[UpstreamCall]:
        with self.lock:
            return [call for call in self.calls if call.name == name]


# Tools a test may add whose server asks the client something mid-call (MCP's
# sampling, elicitation and roots requests), answering what the client said.
ASKS_THE_CLIENT = ("asks_sampling", "asks_elicitation", "asks_roots")


async def _ask_the_client(ctx: Any, name: str) -> types.CallToolResult:
    session = ctx.session
    if name == "asks_sampling":
        message = types.SamplingMessage(
            role="user", content=types.TextContent(text="Say hello")
        )
        answered: Any = await session.create_message([message], max_tokens=10)
    elif name == "asks_elicitation":
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        answered = await session.elicit_form("Go ahead?", schema)
    else:
        answered = await session.list_roots()
    return _text(f"the client answered: {answered}")


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


def _asgi_app(upstream: Upstream) -> Any:
    server: Server[Any] = Server(
        "test-upstream",
        version="1",
        on_list_tools=upstream.on_list_tools,
        on_call_tool=upstream.on_call_tool,
    )
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=False
        ),
    )

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            assert message["type"] == "lifespan.startup"
            async with lifespan():
                await send({"type": "lifespan.startup.complete"})
                await receive()  # lifespan.shutdown
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        with upstream.lock:
            upstream.seen_headers.append(headers)
        for name, value in upstream.required_headers.items():
            if headers.get(name) != value:
                await _plain(send, 401, b"unauthorized")
                return
        if scope["path"].rstrip("/") != "/mcp":
            await _plain(send, 404, b"not found")
            return
        if upstream.flood_bytes and scope["method"] == "POST":
            receive = await _flooded(upstream, receive, send)
            if receive is None:
                return
        if upstream.handshake_only and scope["method"] == "POST":
            receive = await _no_discover(receive, send)
            if receive is None:
                return
        await manager.handle_request(scope, receive, send)

    return app


async def _flooded(upstream: Upstream, receive: Any, send: Any) -> Any:
    """Answer a tools/call of "flood" here (None), else the request's body
    to replay to the SDK."""
    body = await _read_body(receive)
    flood_id, listing = _flood_id(body, upstream.flood_list)
    if flood_id is None:
        return _replay(body)
    await _flood(upstream, flood_id, send, listing)
    return None


async def _no_discover(receive: Any, send: Any) -> Any:
    """Answer a ``server/discover`` as a server of the handshake era does (an
    unknown method: None), else the request's body to replay to the SDK."""
    body = await _read_body(receive)
    try:
        message = json.loads(body)
    except ValueError:
        return _replay(body)
    if not isinstance(message, dict) or message.get("method") != "server/discover":
        return _replay(body)
    error = {"code": -32601, "message": "Method not found"}
    answer = {"jsonrpc": "2.0", "id": message.get("id"), "error": error}
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(answer).encode()})
    return None


async def _read_body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _replay(body: bytes) -> Any:
    sent = {"done": False}

    async def receive() -> dict[str, Any]:
        if not sent["done"]:
            sent["done"] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        return {"type": "http.disconnect"}

    return receive


def _flood_id(body: bytes, lists: bool) -> tuple[Any, bool]:
    """The JSON-RPC id of a tools/call of "flood" (or of a tools/list when
    ``lists``), else None; and whether it is a tools/list."""
    try:
        message = json.loads(body)
    except ValueError:
        return None, False
    if not isinstance(message, dict):
        return None, False
    method = message.get("method")
    if method == "tools/list" and lists:
        return message.get("id"), True
    if method == "tools/call" and (message.get("params") or {}).get("name") == "flood":
        return message.get("id"), False
    return None, False


async def _flood(upstream: Upstream, request_id: Any, send: Any, listing: bool) -> None:
    """A tools/call answer whose text is ``flood_bytes`` of "x" (or a tools/list
    answer whose one tool's description is), streamed."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
    if listing:
        head += ', "result": {"tools": [{"name": "huge", "inputSchema": {}, '
        head += '"description": "'
        tail = '"}]}}'
    else:
        head += ', "result": {"content": [{"type": "text", "text": "'
        tail = '"}], "isError": false}}'
    kind = "application/json"
    if upstream.flood_as == "sse":
        kind, head, tail = (
            "text/event-stream",
            "event: message\ndata: " + head,
            tail + "\n\n",
        )
    headers = [(b"content-type", kind.encode())]
    if upstream.flood_encoding:
        headers.append((b"content-encoding", upstream.flood_encoding.encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    chunk = b"x" * (1 << 20)
    sent = 0
    try:
        await send(
            {"type": "http.response.body", "body": head.encode(), "more_body": True}
        )
        while sent < upstream.flood_bytes:
            piece = chunk[: upstream.flood_bytes - sent]
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            sent += len(piece)
        await send({"type": "http.response.body", "body": tail.encode()})
    except OSError:  # the reader hung up: the point of the test
        pass
    finally:
        with upstream.lock:
            upstream.flood_sent.append(sent)


async def _plain(send: Any, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running_upstream(upstream: Upstream | None = None) -> Iterator[Upstream]:
    """Serve ``upstream`` (a fresh one by default) until the block ends."""
    upstream = upstream or Upstream()
    port = free_port()
    config = uvicorn.Config(
        _asgi_app(upstream),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="test-upstream", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test upstream MCP server did not start")
        time.sleep(0.02)
    upstream.url = f"http://127.0.0.1:{port}/mcp"
    try:
        yield upstream
    finally:
        server.should_exit = True
        thread.join(timeout=10)
