"""``/mcp`` served by the same gunicorn workers and port as the REST API.

``with_mcp(django_app)`` is the WSGI application: ``/mcp`` goes to the MCP SDK's
streamable HTTP app, everything else to Django as before. Host, Origin, the bearer
and the body are checked here, in the worker's own thread, before any MCP work, and
each worker runs one event loop in a thread for the SDK's session manager.
How it is served: docs/how-to/development.md, How /mcp is served; the rules:
docs/explanation/security.md, MCP endpoint.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import WSGIRequest
from django.db import InterfaceError, OperationalError, close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from rest_framework.exceptions import APIException

from config import jsonparse
from config.aio import LoopThread, loop_running_here, per_process, run_here
from config.bodies import Refusal, read_body
from config.middleware import database_trouble
from config.retries import RETRY_AFTER_S, retry_body, retry_headers
from gateway import inbound, refusals
from gateway.server import (
    CALLER,
    INLINE,
    PROBLEM,
    RECORDED,
    REQUEST_ID,
    build_manager,
)
from oauth.auth import (
    InsufficientScope,
    InvalidToken,
    RefusalNotRecorded,
    authenticate_bearer,
    www_authenticate,
)
from oauth.choices import SCOPE_MCP
from telemetry.wsgi import observed

PATH = "/mcp"
# An answer this large is a result: JSON-RPC errors are a few hundred bytes.
ERROR_ANSWER_BYTES = 65_536
INTERNAL = -32603  # JSON-RPC's internal error: a failure, not a refusal
# What an SDK refusal is about, by its JSON-RPC code or its HTTP status.
SDK_FIELDS = {-32700: "body", -32600: "request", -32601: "method", -32602: "params"}
SDK_FIELDS |= {406: "Accept", 415: "Content-Type"}
StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
Answer = tuple[int, list[tuple[str, str]], list[bytes]]


def with_mcp(django_app: WSGIApp) -> WSGIApp:
    mcp = observed(serve_mcp, PATH)  # counted, timed and traced as Django's are

    def application(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == PATH or path.startswith(PATH + "/"):
            return mcp(environ, start)
        return django_app(environ, start)

    return application


def serve_mcp(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
    request = WSGIRequest(environ)
    refusal = _refuse_host(request)
    if refusal is not None:
        return _json(start, *refusal)
    if "access_token" in parse_qs(environ.get("QUERY_STRING", "")):
        detail = "access_token: send it in the Authorization header, never in a URL"
        return _json(start, 400, "invalid", detail)
    close_old_connections()
    try:
        user = authenticate_bearer(request, needed=SCOPE_MCP)
    except InsufficientScope as exc:
        challenge = www_authenticate(
            request, error="insufficient_scope", scope=SCOPE_MCP
        )
        return _json(start, 403, "forbidden", str(exc.detail), challenge=challenge)
    except RefusalNotRecorded:
        return _not_recorded(start)
    except APIException as exc:
        if exc.status_code == 429:  # too many unknown keys from this address
            wait = max(1, math.ceil(getattr(exc, "wait", None) or 1))
            return _json(start, 429, "throttled", str(exc.detail), retry_after=wait)
        error = "invalid_token" if isinstance(exc, InvalidToken) else ""
        challenge = www_authenticate(request, error=error, scope=SCOPE_MCP)
        return _json(start, 401, "unauthorized", str(exc.detail), challenge=challenge)
    except (OperationalError, InterfaceError) as exc:
        detail, retry_after = database_trouble(exc)
        return _json(
            start,
            503,
            "unavailable",
            detail,
            service="database",
            retry_after=retry_after,
        )
    finally:
        close_old_connections()
    if user is None:
        detail = "Authorization: send Bearer <Quiver API key or access token>"
        challenge = www_authenticate(request, scope=SCOPE_MCP)
        return _json(start, 401, "unauthorized", detail, challenge=challenge)
    attempt = refusals.Attempt(user, _request_id(request))
    return _serve(environ, request, start, attempt)


def _serve(
    environ: dict[str, Any],
    request: WSGIRequest,
    start: StartResponse,
    attempt: refusals.Attempt,
) -> Iterable[bytes]:
    """A known key's request: every refusal from here on is recorded."""
    if request.method != "POST":
        # Stateless with JSON answers: no stream for a GET to open, no session to
        # DELETE (the spec's 405), and no worker held by an endless stream.
        detail = "method: /mcp takes POST (stateless, no server stream)"
        return _refused(start, attempt, Refusal(405, "method_not_allowed", detail))
    body = read_body(environ, int(settings.QUIVER_MAX_BODY_BYTES))
    if isinstance(body, Refusal):
        return _refused(start, attempt, body)
    if not _is_json(request):
        detail = "Content-Type: must be application/json"
        return _refused(start, attempt, Refusal(415, "unsupported_media_type", detail))
    checked = inbound.check(body, environ.get("HTTP_MCP_PROTOCOL_VERSION"))
    attempt.method, attempt.tool = checked.method, checked.tool
    if isinstance(checked, inbound.Rejected):
        return _rejected(start, attempt, checked)
    return _answer(environ, start, attempt, checked)


def _answer(
    environ: dict[str, Any],
    start: StartResponse,
    attempt: refusals.Attempt,
    checked: inbound.Inbound,
) -> Iterable[bytes]:
    """The SDK's answer to a readable body (its refusal recorded first)."""
    user = attempt.user
    state = {CALLER: user, REQUEST_ID: attempt.request_id, PROBLEM: checked.problem}
    try:
        status, headers, chunks = _exchanged(environ, _scope(environ, state), checked)
    except TimeoutError:  # the work may still run: never to be sent again blindly
        detail = f"mcp: no answer within {answer_timeout():.0f} s"
        return _json(start, 504, "timeout", detail)
    if not state.get(RECORDED) and not _error_answer_recorded(attempt, status, chunks):
        return _not_recorded(start)
    if status >= 400 and not _json_answer(headers):  # every error is JSON
        detail = b"".join(chunks).decode("utf-8", "replace").strip()[:300]
        return _json(start, status, "invalid", f"request: {detail}")
    headers.append(("X-Request-ID", str(attempt.request_id)))
    start(_status_line(status), headers)
    return chunks


def _exchanged(
    environ: dict[str, Any], scope: dict[str, Any], checked: inbound.Inbound
) -> Answer:
    """The SDK's answer. A 2026-07-28 request is one self-contained exchange that
    needs none of the session manager's tasks: it runs on this thread's own loop
    with its tools' Django work in place (``INLINE``), as POST
    /tool-calls/execute runs, instead of hopping to the process's gateway loop
    and from there to a worker thread and back (four thread hops: ~0.9 ms of CPU
    and ~1.7 ms a call in process, bench/README.md). The handshake era's
    stateless sessions live on the gateway loop."""
    loop = _loop()  # started: its manager's lifespan state is set
    version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    modern = version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
    if modern and not loop_running_here():
        scope["state"][INLINE] = True
        return run_here(_exchange(loop.manager, scope, checked.body), answer_timeout())
    return loop.call(scope, checked.body)


def _is_json(request: WSGIRequest) -> bool:
    return (request.content_type or "").lower() == "application/json"


def _json_answer(headers: list[tuple[str, str]]) -> bool:
    kinds = [value for name, value in headers if name.lower() == "content-type"]
    return any(kind.lower().startswith("application/json") for kind in kinds)


def _recorded(attempt: refusals.Attempt, reason: str, **why: Any) -> bool:
    """Record a refusal; False when its row could not be written."""
    close_old_connections()
    try:
        refusals.record(attempt, reason, **why)
    except refusals.NotRecorded:
        return False
    finally:
        close_old_connections()
    return True


def _refused(
    start: StartResponse, attempt: refusals.Attempt, refusal: Refusal
) -> list[bytes]:
    field = refusal.detail.split(":", 1)[0]
    if not _recorded(attempt, refusal.detail, field=field, status=refusal.status):
        return _not_recorded(start)
    allow = "POST" if refusal.status == 405 else ""
    return _json(start, refusal.status, refusal.error, refusal.detail, allow=allow)


def _rejected(
    start: StartResponse, attempt: refusals.Attempt, rejected: inbound.Rejected
) -> list[bytes]:
    """A body the API's JSON rules refuse: a JSON-RPC error naming the field."""
    problem = rejected.problem
    why = {"field": problem.field, "code": rejected.code, "status": 400}
    if not _recorded(attempt, str(problem), **why):
        return _not_recorded(start)
    answer = rejected.answer()
    headers = [("Content-Type", "application/json")]
    headers.append(("Content-Length", str(len(answer))))
    start(_status_line(400), headers)
    return [answer]


def _error_answer_recorded(
    attempt: refusals.Attempt, status: int, chunks: list[bytes]
) -> bool:
    """Record the SDK's refusal (a JSON-RPC error, or an HTTP error status);
    False when it is one and its row could not be written."""
    error = _error_of(status, b"".join(chunks))
    if error is None:
        return True
    code = error.get("code") if isinstance(error.get("code"), int) else None
    message = str(error.get("message") or "").strip() or f"HTTP {status}"
    # The first line only: a validation error's later lines quote the input.
    reason = message.splitlines()[0][:300]
    field = SDK_FIELDS.get(status) or SDK_FIELDS.get(code or 0) or "request"
    return _recorded(attempt, reason, field=field, code=code, status=status)


def _error_of(status: int, body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error an answer carries, if it is one. An answer under 400
    without the member name ``"error"`` anywhere in it carries none: it is not
    parsed again (that was ~15% of a search's CPU on the request thread)."""
    if status < 400 and (len(body) > ERROR_ANSWER_BYTES or b'"error"' not in body):
        return None
    try:
        answer = jsonparse.loads(body) if body else None  # a deep result: not one
    except ValueError:
        answer = None
    error = answer.get("error") if isinstance(answer, dict) else None
    if status >= 500 or (isinstance(error, dict) and error.get("code") == INTERNAL):
        return None  # a failure, not a refusal: the SDK logged it
    if isinstance(error, dict):
        return error
    return {} if status >= 400 else None


def _not_recorded(start: StartResponse) -> list[bytes]:
    """A refusal whose row could not be written: nothing was done, so it may be
    sent again."""
    return _json(
        start,
        503,
        "unavailable",
        refusals.NOT_RECORDED,
        service="audit",
        retry_after=RETRY_AFTER_S,
    )


def answer_timeout() -> float:
    """How long an /mcp request may take: 10 s under gunicorn's timeout, and
    so above the longest tool call (QUIVER_CALL_TIMEOUT_MAX_SECONDS)."""
    return float(settings.QUIVER_WEB.timeout_s - 10)


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

    def call(self, scope: dict[str, Any], body: bytes) -> Answer:
        return self.submit(_exchange(self.manager, scope, body), answer_timeout())


async def _exchange(
    manager: StreamableHTTPSessionManager, scope: dict[str, Any], body: bytes
) -> Answer:
    """The request handed to the SDK whole, its answer collected whole."""
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
        await manager.handle_request(scope, receive, send)
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
    challenge: str = "",
    allow: str = "",
    service: str = "",
    retry_after: int | None = None,
) -> list[bytes]:
    """A JSON error; a 429 or 5xx says whether it may be sent again
    (``retry_after``: seconds; None: it may not; config.retries)."""
    answer: dict[str, Any] = {"error": error, "detail": detail}
    answer |= {"service": service} if service else {}
    headers = [("Content-Type", "application/json")]
    if status == 429 or status >= 500:
        answer = retry_body(answer, retry_after)
        headers += list(retry_headers(retry_after).items())
    body = json.dumps(answer).encode()
    headers.append(("Content-Length", str(len(body))))
    if challenge:
        headers.append(("WWW-Authenticate", challenge))
    if allow:
        headers.append(("Allow", allow))
    start(_status_line(status), headers)
    return [body]
