"""quiver-mcp: a stdio MCP server that relays to a Quiver's `/mcp`.

For MCP clients that only launch stdio servers: each JSON-RPC message read from stdin
is POSTed to `<url>/mcp` with the key as a bearer token, and each message of the
answer written to stdout, one per line; an HTTP failure becomes a JSON-RPC error for
that request's id, so stdout only ever carries JSON-RPC. It sends the protocol
headers the streamable HTTP transport requires of each era. httpx only; no MCP SDK.

    quiver-mcp --url http://127.0.0.1:8000 --key qv_...
    QUIVER_URL=... QUIVER_API_KEY=... quiver-mcp
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

import httpx

from quiver_client.wire import USER_AGENT

log = logging.getLogger("quiver_client.bridge")

PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
NAME_BEARING_METHODS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}
# JSON-RPC codes: the server-error range for transport failures.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
HTTP_ERROR = -32001
UNREACHABLE = -32002

_HEADER_SAFE = re.compile(r"^[\x20-\x7E]*$")
_B64_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")

Message = dict[str, Any]


def encode_header_value(value: str) -> str:
    """A value as the transport's `Mcp-Name` header carries it (base64 sentinel
    for anything that would not survive an HTTP field round-trip)."""
    if (
        _HEADER_SAFE.fullmatch(value)
        and value == value.strip()
        and not _B64_SENTINEL.fullmatch(value)
    ):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def endpoint(url: str) -> str:
    """`<url>/mcp`; a URL that already ends in /mcp is kept."""
    url = url.rstrip("/")
    return url if url.endswith("/mcp") else f"{url}/mcp"


def error_response(request_id: Any, code: int, message: str, **data: Any) -> Message:
    error: Message = {"code": code, "message": message}
    if data:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def parse_event_stream(text: str) -> list[Any]:
    """The JSON of each event's `data:` lines (several lines of one event joined)."""
    messages: list[Any] = []
    data: list[str] = []

    def flush() -> None:
        if data:
            payload = "\n".join(data).strip()
            data.clear()
            if payload:
                messages.append(json.loads(payload))

    for line in text.splitlines():
        if not line.strip():
            flush()
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    flush()
    return messages


class Bridge:
    """Relays JSON-RPC messages to one Quiver's `/mcp`; thread-safe."""

    def __init__(
        self,
        url: str,
        key: str,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = endpoint(url)
        self.protocol_version: str | None = None  # negotiated by `initialize`
        self._http = httpx.Client(
            timeout=timeout,
            transport=transport,
            headers={
                "Authorization": f"Bearer {key}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "User-Agent": f"quiver-mcp {USER_AGENT}",
            },
        )

    def close(self) -> None:
        self._http.close()

    def headers_for(self, message: Any) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return headers
        method = message["method"]
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = (
            meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
        )
        if isinstance(version, str) and isinstance(params, dict):
            headers["MCP-Protocol-Version"] = version
            headers["Mcp-Method"] = method
            name_key = NAME_BEARING_METHODS.get(method)
            name = params.get(name_key) if name_key else None
            if isinstance(name, str):
                headers["Mcp-Name"] = encode_header_value(name)
        elif method == "initialize":
            headers.pop("MCP-Protocol-Version", None)  # a new handshake
        return headers

    def relay(self, message: Any) -> list[Any]:
        """Send one message (or a batch); the messages to write back."""
        request_ids = _request_ids(message)
        try:
            response = self._http.post(
                self.url,
                content=json.dumps(message).encode("utf-8"),
                headers=self.headers_for(message),
            )
        except httpx.TimeoutException as exc:
            log.error("quiver-mcp: %s timed out: %s", self.url, exc)
            reason = (
                f"Quiver at {self.url} did not answer in time ({type(exc).__name__})"
            )
            return [error_response(i, UNREACHABLE, reason) for i in request_ids]
        except httpx.HTTPError as exc:
            log.error("quiver-mcp: cannot reach %s: %s", self.url, exc)
            reason = f"cannot reach Quiver at {self.url}: {exc or type(exc).__name__}"
            return [error_response(i, UNREACHABLE, reason) for i in request_ids]
        try:
            answers = self._answers(response)
        except ValueError as exc:
            log.error("quiver-mcp: unreadable answer from %s: %s", self.url, exc)
            if response.is_success:
                reason = f"Quiver at {self.url} sent an answer that is not JSON-RPC"
                return [error_response(i, HTTP_ERROR, reason) for i in request_ids]
            answers = []
        if not response.is_success and not any(_is_jsonrpc(a) for a in answers):
            return [self._http_error(i, response) for i in request_ids]
        self._remember_version(message, answers)
        return answers

    def _answers(self, response: httpx.Response) -> list[Any]:
        if response.status_code == 202 or not response.content.strip():
            return []
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("text/event-stream"):
            found = parse_event_stream(response.text)
        else:
            found = [json.loads(response.content)]
        return [m for m in found if m is not None]

    def _http_error(self, request_id: Any, response: httpx.Response) -> Message:
        detail = ""
        try:
            body = response.json()
            if isinstance(body, dict):
                detail = str(body.get("detail") or body.get("error") or "")
        except ValueError:
            detail = response.text.strip()[:200]
        hint = {
            401: " (check --key / QUIVER_API_KEY)",
            403: " (the Origin or the key's permissions)",
            421: " (this host name is not in the server's ALLOWED_HOSTS)",
            429: " (rate limited; retry later)",
        }.get(response.status_code, "")
        status = f"{response.status_code} {response.reason_phrase}".strip()
        message = f"Quiver answered {status}" + (f": {detail}" if detail else "") + hint
        log.error("quiver-mcp: %s", message)
        return error_response(
            request_id, HTTP_ERROR, message, status=response.status_code, url=self.url
        )

    def _remember_version(self, message: Any, answers: list[Any]) -> None:
        if not (isinstance(message, dict) and message.get("method") == "initialize"):
            return
        for answer in answers:
            if isinstance(answer, dict) and answer.get("id") == message.get("id"):
                result = answer.get("result")
                version = (
                    result.get("protocolVersion") if isinstance(result, dict) else None
                )
                if isinstance(version, str):
                    self.protocol_version = version


def _is_jsonrpc(value: Any) -> bool:
    if isinstance(value, list):
        return any(_is_jsonrpc(v) for v in value)
    return isinstance(value, dict) and value.get("jsonrpc") == "2.0"


def _request_ids(message: Any) -> list[Any]:
    """Ids of the requests in a message or batch (notifications and client
    responses have no answer)."""
    items = message if isinstance(message, list) else [message]
    return [
        item["id"]
        for item in items
        if isinstance(item, dict) and "method" in item and item.get("id") is not None
    ]


class Writer:
    """One JSON-RPC message per line on stdout, whole lines only."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, messages: Iterable[Any]) -> None:
        for message in messages:
            line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
            with self._lock:
                self._stream.write(line.encode("utf-8") + b"\n")
                self._stream.flush()


def serve(
    bridge: Bridge, stdin: IO[bytes], stdout: IO[bytes], *, workers: int = 8
) -> None:
    """Relay until stdin closes; requests run concurrently, `initialize` alone."""
    writer = Writer(stdout)

    def handle(message: Any) -> None:
        try:
            writer.write(bridge.relay(message))
        except Exception:  # never a traceback on stdout, never a silent hang
            log.exception("quiver-mcp: relaying failed")
            writer.write(
                error_response(i, HTTP_ERROR, "quiver-mcp failed to relay this request")
                for i in _request_ids(message)
            )

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for raw in stdin:
            if not raw.strip():
                continue
            try:
                message = json.loads(raw)
            except ValueError as exc:
                log.error("quiver-mcp: a line on stdin is not JSON: %s", exc)
                writer.write([error_response(None, PARSE_ERROR, f"Parse error: {exc}")])
                continue
            if not isinstance(message, dict | list) or message == []:
                writer.write([error_response(None, INVALID_REQUEST, "Invalid Request")])
                continue
            if isinstance(message, dict) and message.get("method") == "initialize":
                handle(message)  # the version it negotiates heads what follows
            else:
                pool.submit(handle, message)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quiver-mcp",
        description="A stdio MCP server relaying to a Quiver's /mcp endpoint.",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("QUIVER_URL"),
        help="the Quiver's base URL, e.g. http://127.0.0.1:8000 (env QUIVER_URL)",
    )
    parser.add_argument(
        "--key",
        default=os.environ.get("QUIVER_API_KEY"),
        help="a Quiver API key (env QUIVER_API_KEY)",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per request (60)"
    )
    parser.add_argument(
        "--log-level", default=os.environ.get("QUIVER_MCP_LOG", "WARNING"),
        help="stderr log level (WARNING; env QUIVER_MCP_LOG)",
    )  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    named = {"--url (or QUIVER_URL)": args.url, "--key (or QUIVER_API_KEY)": args.key}
    missing = [name for name, value in named.items() if not value]
    if missing:
        parser.error("missing " + " and ".join(missing))  # exits 2, usage on stderr
    if not str(args.url).startswith(("http://", "https://")):
        parser.error(f"--url must start with http:// or https://, not {args.url!r}")
    level = logging.getLevelName(str(args.log_level).upper())
    if not isinstance(level, int):
        parser.error(
            f"--log-level must be DEBUG, INFO, WARNING or ERROR, not {args.log_level!r}"
        )
    logging.basicConfig(
        stream=sys.stderr,
        level=level,
        format="%(asctime)s %(levelname)s %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    bridge = Bridge(args.url, args.key, timeout=args.timeout)
    log.info("quiver-mcp: relaying stdio to %s", bridge.url)
    try:
        serve(bridge, sys.stdin.buffer, sys.stdout.buffer)
    except KeyboardInterrupt:
        pass
    finally:
        bridge.close()


if __name__ == "__main__":
    main()
