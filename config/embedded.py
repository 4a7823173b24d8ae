"""Local servers several devstack processes share: the first starts one on its
data directory, each registers itself there, the last to leave stops it
(``shared_server``); and the small process helpers around them."""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def say(message: str) -> None:
    print(f"[quiver] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def shared_server(
    data_dir: Path, start: Callable[[], str], stop: Callable[[], None]
) -> Iterator[str]:
    """Under data_dir's lock, start or join its server (``start`` gives its URL)
    and register this process as a user; on leaving, the last user ``stop``s it."""
    with _server_lock(data_dir):
        url = start()
        _users(data_dir).mkdir(exist_ok=True)
        (_users(data_dir) / str(os.getpid())).touch()
    try:
        yield url
    finally:
        with _server_lock(data_dir):
            (_users(data_dir) / str(os.getpid())).unlink(missing_ok=True)
            if not live_users(data_dir):
                stop()


def _users(data_dir: Path) -> Path:
    return data_dir.parent / f"{data_dir.name}.users"


def live_users(data_dir: Path) -> list[int]:
    """Process ids of the devstack processes still using this Postgres."""
    alive = []
    for entry in _users(data_dir).glob("*"):
        try:
            os.kill(int(entry.name), 0)
        except (ValueError, ProcessLookupError):
            entry.unlink(missing_ok=True)  # a crashed run's leftover
            continue
        except PermissionError:
            pass  # alive, owned by another user
        alive.append(int(entry.name))
    return alive


@contextmanager
def _server_lock(data_dir: Path) -> Iterator[None]:
    """One devstack process at a time starts, joins, leaves or stops a server."""
    with open(data_dir.parent / f"{data_dir.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"redis-server exited with code {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit("redis-server did not start within 20 seconds")


def terminate(process: subprocess.Popen[bytes], name: str) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    say(f"{name} stopped")
