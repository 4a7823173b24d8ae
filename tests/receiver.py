"""A real HTTP receiver for webhooks: a threaded http.server that records every
request and answers as it is told (the ``receiver`` fixture, tests/conftest.py)."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """The answers to give, in turn (the last one repeats), and what came."""

    url: str
    answers: list[tuple[int, Any, dict[str, str]]] = field(default_factory=list)
    got: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, *answers: Any) -> None:
        """Each answer: a status, or (status, body), or (status, body, headers); a
        body is text, bytes, or a function of the request received."""
        with self.lock:
            self.answers = [
                (a, "", {})
                if isinstance(a, int)
                else (a[0], a[1], dict(a[2:] and a[2]))
                for a in answers
            ]

    def wait_for(self, count: int, timeout: float = 60) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.got) >= count:
                    return list(self.got)
            time.sleep(0.1)
        raise AssertionError(f"the receiver got {len(self.got)} requests, not {count}")


def _handler(receiver: Receiver) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            received = Received(self.path, dict(self.headers), body)
            with receiver.lock:
                receiver.got.append(received)
                index = min(len(receiver.got), len(receiver.answers)) - 1
                status, text, headers = (
                    receiver.answers[index] if receiver.answers else (200, "ok", {})
                )
            text = text(received) if callable(text) else text
            payload = text if isinstance(text, bytes) else text.encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    found = Receiver("")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(found))
    found.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/quiver"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
