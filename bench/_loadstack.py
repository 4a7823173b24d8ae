"""The stacks of the benches: a bench database, gunicorn, the processes of ``make
run`` (``MakeRun``), and a janitor.

The janitor is a small process in its own session that drops the bench database if
``bench/load.py`` dies without doing it (``config.devstack`` kills its command a
quarter of a second after a Ctrl-C; gunicorn is stopped by the kernel then, see
``PDEATHSIG``). The script tells it ``done`` when it has cleaned up itself.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
# Runs in the child before exec: the kernel sends SIGTERM to gunicorn's master if
# this process dies without stopping it (kill -9, or devstack killing us on Ctrl-C).
PDEATHSIG = (
    "import ctypes, os, signal, sys; "
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM); "
    "os.execv(sys.executable, sys.argv[1:])"
)


JANITOR = (
    "import sys, psycopg\n"
    "if sys.stdin.readline().strip() != 'done':\n"
    "    with psycopg.connect(sys.argv[1], autocommit=True) as conn:\n"
    "        conn.execute(f'DROP DATABASE IF EXISTS \"{sys.argv[2]}\" WITH (FORCE)')\n"
    "    print(f'[load] janitor: dropped {sys.argv[2]}', file=sys.stderr)\n"
)


# --- the database ---------------------------------------------------------------------


def with_database(url: str, name: str) -> str:
    """The same server's URL for another database."""
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def database_exists(admin_url: str, name: str) -> bool:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        return row.fetchone() is not None


def create_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def web_backends(dsn: str, app_name: str) -> int:
    """Connections the web workers hold (one per worker once it has answered)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (app_name,),
        ).fetchone()
    return int(row[0]) if row else 0


def backend_cpu_s(dsn: str, app_name: str) -> dict[int, float]:
    """CPU seconds so far of each Postgres backend serving the web (by pid)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
            (app_name,),
        ).fetchall()
    return {int(pid): cpu_seconds(int(pid)) for (pid,) in rows}


def redis_cpu_s(url: str) -> float:
    """The Redis server's CPU seconds so far (INFO cpu; the broker devstack runs)."""
    import redis

    info = redis.Redis.from_url(url).info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


# --- gunicorn -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


class Gunicorn:
    """gunicorn as ``make run`` starts it (``config/gunicorn.py``: threaded
    workers, metrics written to a directory of its own) with ``workers``
    processes of ``threads`` threads, on a free loopback port, DEBUG false."""

    def __init__(self, workers: int, log_dir: Path, threads: int = 0) -> None:
        self.workers = workers
        self.port = free_port()
        self.app_name = f"bench-load-web-{self.port}"
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"gunicorn-{workers}w-{self.port}.log"
        metrics = log_dir / f"metrics-{self.port}"
        metrics.mkdir()
        env = {
            **os.environ,
            "DEBUG": "false",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or os.urandom(32).hex(),
            "PGAPPNAME": self.app_name,
            "PROMETHEUS_MULTIPROC_DIR": str(metrics),
        }
        command = [
            sys.executable, "-c", PDEATHSIG,
            sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn",
            "config.wsgi:application", "--workers", str(workers),
            *(["--threads", str(threads)] if threads else []),
            "--bind", f"127.0.0.1:{self.port}", "--log-level", "warning",
        ]  # fmt: skip
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def wait_ready(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn exited; see {self.log_path}")
            with socket.socket() as sock:
                listening = sock.connect_ex(("127.0.0.1", self.port)) == 0
            if listening and len(self.worker_pids()) == self.workers:
                return
            time.sleep(0.1)
        raise SystemExit(f"gunicorn did not start in {timeout_s}s; see {self.log_path}")

    def worker_pids(self) -> list[int]:
        pid = self.process.pid
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in children.split()]

    def workers_cpu_s(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.worker_pids())

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


@contextmanager
def gunicorn(workers: int, log_dir: Path, threads: int = 0) -> Iterator[Gunicorn]:
    web = Gunicorn(workers, log_dir, threads)
    try:
        web.wait_ready()
        yield web
    finally:
        web.stop()


class Janitor:
    """Drops ``name`` unless told ``done`` before this process goes away."""

    def __init__(self, admin_url: str, name: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", JANITOR, admin_url, name],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )

    def done(self) -> None:
        """The database was dealt with: exit without touching it."""
        if self.process.stdin is not None:
            self.process.stdin.write(b"done\n")
            self.process.stdin.close()
        self.process.wait(timeout=30)


class MakeRun:
    """The Celery worker and gunicorn of ``make run`` (the commands
    ``config.devstack`` runs), on the database ``env`` names; their output goes
    to ``logs``/worker.log and web.log. Each dies with this process."""

    def __init__(self, env: dict[str, str], logs: Path, name: str) -> None:
        from config.devstack import RunOptions, web_command

        logs.mkdir(parents=True, exist_ok=True)
        self.logs = logs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._logs = [(logs / "worker.log").open("wb"), (logs / "web.log").open("wb")]
        worker = [
            sys.executable, "-m", "celery", "-A", "config", "worker",
            "--loglevel", "WARNING", "--concurrency", "2", "-Q", "quiver",
            "--hostname", f"{name}-{self.port}@%h",
        ]  # fmt: skip
        web = web_command(RunOptions(port=self.port, debug=False))
        self.processes = [
            subprocess.Popen(
                [sys.executable, "-c", PDEATHSIG, *command],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
            for command, log in zip([worker, web], self._logs, strict=True)
        ]

    def wait_ready(self, timeout_s: float = 180) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.processes):
                raise SystemExit(f"the worker or gunicorn exited; see {self.logs}")
            try:
                if httpx.get(f"{self.url}/api/v1/", timeout=2).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"gunicorn did not answer in {timeout_s}s; see {self.logs}")

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        for log in self._logs:
            log.close()


def wait_embedded(dsn: str, timeout_s: float = 600) -> None:
    """Until the worker has embedded every tool of the database."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE embedding_status = 'ready'), count(*) "
                "FROM catalog_tool"
            ).fetchone()
        if row and row[1] and row[0] == row[1]:
            return
        time.sleep(1)
    raise SystemExit("the catalog was not embedded in time")
