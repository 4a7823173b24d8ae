"""``/mcp`` served by the same gunicorn workers and port as the REST API.

``with_mcp(django_app)`` is the WSGI application: ``/mcp`` goes to the MCP SDK's
streamable HTTP app, everything else to Django as before (so the REST API's path
is unchanged). Before any MCP work, in the worker's own thread:

1. Host must be one of ``ALLOWED_HOSTS`` (421), and an ``Origin``, when sent, must
   name an allowed host (403): the spec's DNS-rebinding defence.
2. ``Authorization: Bearer <API key>`` through the REST API's own authentication
   (``catalog.auth.ApiKeyAuthentication``: unknown-key penalty, revoked, expired,
   deactivated, chain of keys): anything else is a 401.

Each worker process runs one event loop in a thread (started on its first
``/mcp`` request, so after gunicorn's fork) holding the SDK's session manager in
its lifespan; the request is handed to it whole and the answer collected whole
(stateless mode with JSON answers: no stream outlives its request)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from rest_framework.exceptions import APIException

from catalog.auth import ApiKeyAuthentication
from config.aio import LoopThread, per_process
from config.bodies import Refusal, read_body
from gateway.server import CALLER, REQUEST_ID, build_manager

PATH = "/mcp"
ANSWER_TIMEOUT_S = 50.0  # under gunicorn's --timeout 60
StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def with_mcp(django_app: WSGIApp) -> WSGIApp:
    def application(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == PATH or path.startswith(PATH + "/"):
            return serve_mcp(environ, start)
        return django_app(environ, start)

    return application


def serve_mcp(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
    request = WSGIRequest(environ)
    refusal = _refuse_host(request)
    if refusal is not None:
        return _json(start, *refusal)
    close_old_connections()
    try:
        user = _authenticate(request)
    except APIException as exc:
        status = 429 if exc.status_code == 429 else 401
        return _json(start, status, "unauthorized", str(exc.detail), bearer=True)
    finally:
        close_old_connections()
    if user is None:
        detail = "Authorization: send Bearer <Quiver API key>"
        return _json(start, 401, "unauthorized", detail, bearer=True)
    if request.method != "POST":
        # Stateless with JSON answers: no stream for a GET to open, no session to
        # DELETE (the spec's 405), and no worker held by an endless stream.
        detail = "method: /mcp takes POST (stateless, no server stream)"
        return _json(start, 405, "method_not_allowed", detail, allow="POST")
    body = read_body(environ, int(settings.QUIVER_MAX_BODY_BYTES))
    if isinstance(body, Refusal):
        return _json(start, body.status, body.error, body.detail)
    request_id = _request_id(request)
    try:
        status, headers, chunks = _loop().call(
            _scope(environ, {CALLER: user, REQUEST_ID: request_id}), body
        )
    except TimeoutError:
        detail = f"mcp: no answer within {ANSWER_TIMEOUT_S:.0f} s"
        return _json(start, 504, "timeout", detail)
    headers.append(("X-Request-ID", str(request_id)))
    start(_status_line(status), headers)
    return chunks


def _refuse_host(request: WSGIRequest) -> tuple[int, str, str] | None:
    try:
        host = request.get_host()  # ALLOWED_HOSTS, as Django checks it
    except DisallowedHost:
        return 421, "misdirected", "Host: not a host this server answers for"
    origin = request.headers.get("Origin")
    if origin is None:
        return None
    parts = urlsplit(origin)
    domain, _port = split_domain_port(parts.netloc)
    same = f"{request.scheme}://{host}" == origin
    if not same and not (
        parts.scheme in ("http", "https")
        and domain
        and validate_host(domain, settings.ALLOWED_HOSTS)
    ):
        return 403, "forbidden", "Origin: not an origin this server answers for"
    return None


def _authenticate(request: WSGIRequest) -> Any:
    """The key's user, or None when no bearer key was sent; raises for a bad key."""
    found = ApiKeyAuthentication().authenticate(request)  # type: ignore[arg-type]
    return None if found is None else found[0]


def _request_id(request: WSGIRequest) -> uuid.UUID:
    try:
        return uuid.UUID(request.headers.get("X-Request-ID", ""))
    except ValueError:
        return uuid.uuid4()


def _scope(environ: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    headers = [
        (key[5:].replace("_", "-").lower().encode("latin-1"), value.encode("latin-1"))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            name = key.replace("_", "-").lower().encode()
            headers.append((name, environ[key].encode("latin-1")))
    server = (environ.get("SERVER_NAME", ""), int(environ.get("SERVER_PORT") or 0))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").split("/")[-1],
        "method": environ["REQUEST_METHOD"],
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": environ.get("PATH_INFO", ""),
        "raw_path": environ.get("PATH_INFO", "").encode("latin-1"),
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "client": (environ.get("REMOTE_ADDR", ""), 0),
        "server": server,
        "state": state,
    }


class _Loop(LoopThread):
    """One event loop thread per process, with the session manager running."""

    def __init__(self) -> None:
        self.manager = build_manager()
        super().__init__("quiver-mcp", lifespan=self.manager.run)

    def call(
        self, scope: dict[str, Any], body: bytes
    ) -> tuple[int, list[tuple[str, str]], list[bytes]]:
        return self.submit(self._call(scope, body), ANSWER_TIMEOUT_S)

    async def _call(
        self, scope: dict[str, Any], body: bytes
    ) -> tuple[int, list[tuple[str, str]], list[bytes]]:
        sent = {"body": False}
        done = asyncio.Event()
        answer: dict[str, Any] = {"status": 500, "headers": [], "chunks": []}

        async def receive() -> dict[str, Any]:
            if not sent["body"]:
                sent["body"] = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                answer["headers"] = [
                    (key.decode("latin-1"), value.decode("latin-1"))
                    for key, value in message.get("headers", [])
                ]
            elif message["type"] == "http.response.body":
                answer["chunks"].append(message.get("body", b""))
                if not message.get("more_body", False):
                    done.set()

        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            done.set()
        return answer["status"], answer["headers"], answer["chunks"]


def _loop() -> _Loop:
    return per_process("mcp", _Loop)


def _status_line(status: int) -> str:
    from http import HTTPStatus

    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


def _json(
    start: StartResponse,
    status: int,
    error: str,
    detail: str,
    *,
    bearer: bool = False,
    allow: str = "",
) -> list[bytes]:
    body = json.dumps({"error": error, "detail": detail}).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    if bearer:
        headers.append(("WWW-Authenticate", 'Bearer realm="quiver"'))
    if allow:
        headers.append(("Allow", allow))
    start(_status_line(status), headers)
    return [body]
