"""How a request body is read whole, for Django's middleware and for /mcp alike.

A body comes with a ``Content-Length``, or chunked (``Transfer-Encoding: chunked``,
no length). Only a server that decodes chunks and marks the end of the body
(``wsgi.input_terminated``: gunicorn, uWSGI) can give a chunked body; on any other
the answer is 411, never the body taken as empty. Past ``limit`` bytes is 413."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str
    detail: str


def is_chunked(environ: dict[str, Any]) -> bool:
    encoding = str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
    return "chunked" in encoding and not environ.get("CONTENT_LENGTH")


def read_chunked(environ: dict[str, Any], limit: int) -> bytes | Refusal:
    """A chunked body, whole, or why it cannot be read."""
    if not environ.get("wsgi.input_terminated"):
        detail = "body: send a Content-Length (this server cannot read chunks)"
        return Refusal(411, "length_required", detail)
    body: bytes = environ["wsgi.input"].read(limit + 1)
    if len(body) > limit:
        return Refusal(413, "payload_too_large", f"body: must be at most {limit} bytes")
    return body


def read_body(environ: dict[str, Any], limit: int) -> bytes | Refusal:
    """The whole body (``b""`` for none), or why it cannot be read."""
    if is_chunked(environ):
        return read_chunked(environ, limit)
    length = str(environ.get("CONTENT_LENGTH") or "")
    if not length.isdigit():
        return b""
    if int(length) > limit:
        detail = f"body: must be at most {limit} bytes, got {length}"
        return Refusal(413, "payload_too_large", detail)
    body: bytes = environ["wsgi.input"].read(int(length))
    return body
