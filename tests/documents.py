"""A tiny HTTP server on 127.0.0.1 serving JSON documents a test sets (a client
ID metadata document, an authorization server's metadata and keys), and
answering form POSTs with a function a test sets (introspection). It stands for
someone else's server: never Quiver's own parts."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs


class Documents:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.documents: dict[str, tuple[Any, dict[str, str]]] = {}
        self.posts: dict[str, Callable[[dict[str, str], str], Any]] = {}
        self.fetched: list[str] = []

    def put(self, path: str, body: Any, **headers: str) -> str:
        self.documents[path] = (body, headers)
        return self.url + path


def _handler(documents: Documents) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            documents.fetched.append(self.path)
            found = documents.documents.get(self.path)
            if found is None:
                self._send(404, {"error": "not found"}, {})
                return
            self._send(200, *found)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            form = {
                k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()
            }
            answer = documents.posts.get(self.path)
            if answer is None:
                self._send(404, {"error": "not found"}, {})
                return
            self._send(200, answer(form, self.headers.get("Authorization", "")), {})

        def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serving_documents() -> Iterator[Documents]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(None))  # type: ignore[arg-type]
    documents = Documents(server.server_address[1])
    server.RequestHandlerClass = _handler(documents)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield documents
    finally:
        server.shutdown()
        server.server_close()
