"""Shared fixtures: personas, API clients, and a real Celery worker process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db.backends.signals import connection_created
from django.dispatch import receiver as on_signal
from rest_framework.test import APIClient

from audit.writer import close_all as close_audit_connections
from catalog.services import ensure_default_catalog
from tests.audit_trail import Trail, make_audit_trail
from tests.factories import make_client_key, make_user
from tests.receiver import Receiver, running_receiver

ROOT = Path(__file__).resolve().parent.parent
# Under pytest-xdist ("gw0", "gw1", ...; empty on one process) each process has
# its own test database (pytest-django names it) and its own Redis database for
# the broker, the rate limits and the workers it starts: Celery's queues and its
# broadcast channels are per Redis database, so a worker started by one process
# never takes another's tasks or answers its pings.
XDIST = os.environ.get("PYTEST_XDIST_WORKER", "")


def _per_process_broker() -> None:
    if not XDIST:
        return
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(settings.CELERY_BROKER_URL)
    url = urlunsplit(parts._replace(path=f"/{int(XDIST.removeprefix('gw')) + 1}"))
    os.environ["CELERY_BROKER_URL"] = url
    settings.CELERY_BROKER_URL = url
    from config.celery import app

    app.conf.broker_url = url


_per_process_broker()


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent with -p no:xdist
def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    from tests.scheduling import InOrderModules

    return InOrderModules(config, log)


@on_signal(connection_created)
def _tests_may_flush_the_audit_log(connection: Any, **kwargs: Any) -> None:
    """A transactional test's flush TRUNCATEs every table; the audit table's trigger
    refuses that unless the session says so (tests of the trigger unset it)."""
    with connection.cursor() as cursor:
        cursor.execute("SET quiver.audit_truncate = 'on'")


def _flush_through_deadlocks() -> None:
    """A transactional test's flush TRUNCATEs every table while the module's
    Celery workers may still be writing (the sealer in a worker's main process,
    a job's last heartbeat): Postgres then breaks the deadlock by failing one
    side, and a failed flush leaves the test's rows to the next test. The
    flush is tried again, as the worker's side is once its write commits."""
    from django.core.management.commands import flush

    handle = flush.Command.handle

    def retried(self: Any, **options: Any) -> None:
        for attempt in range(4):
            try:
                handle(self, **options)
                return
            except Exception as exc:  # CommandError, from the database's error
                if attempt == 3 or "deadlock detected" not in str(exc.__cause__):
                    raise
                time.sleep(0.2 * (attempt + 1))

    flush.Command.handle = retried  # type: ignore[method-assign]


_flush_through_deadlocks()


@pytest.fixture(autouse=True)
def audit_checkpoints_per_test(settings: Any, tmp_path: Path) -> Path:
    """Each test's audit checkpoints go to its own file: the database is rolled back
    between tests, a checkpoint file is not."""
    path = tmp_path / "audit-checkpoints.jsonl"
    settings.QUIVER_AUDIT_CHECKPOINT_FILE = path
    return path


@pytest.fixture(autouse=True)
def audit_connections_close_after_each_test() -> Iterator[None]:
    """Audit rows sent early (audit.writer) go over connections of their own; they
    close with the test, so none is left open when the test database is dropped."""
    yield
    close_audit_connections()


@pytest.fixture
def slow_audit_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit list's count takes 300 ms of database time; the list may spend
    50 (compliance.paging's time limit)."""
    from django.db import connection

    from compliance import paging

    def count(self: Any) -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(0.3)")
        return 0

    monkeypatch.setattr(paging, "TIME_LIMIT_MS", 50)
    monkeypatch.setattr(paging.CappedPaginator, "count", property(count))


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    """Real hashing costs ~1 s per test user; tests don't need its strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


TRANSACTIONAL = {"transactional_db", "live_server", "celery_worker"}


@pytest.fixture(autouse=True)
def default_catalog_exists(request: Any) -> None:
    """A migration makes the ``default`` catalog; a transactional test's flush
    removes it, so put it back for every test that uses the database."""
    marker = request.node.get_closest_marker("django_db")
    names = set(request.fixturenames)
    if marker is None and not names & (TRANSACTIONAL | {"db"}):
        return
    transactional = bool(names & TRANSACTIONAL) or bool(
        marker and marker.kwargs.get("transaction")
    )
    request.getfixturevalue("transactional_db" if transactional else "db")
    ensure_default_catalog()


@pytest.fixture
def admin_user(db: None) -> Any:
    return make_user("root", superuser=True)


@pytest.fixture
def curator(db: None) -> Any:
    return make_user("carla", groups=("curator",))


@pytest.fixture
def member(db: None) -> Any:
    """Signed in, no special group: reads the catalog, cannot write it."""
    return make_user("mo")


@pytest.fixture
def as_member(client: Any, member: Any) -> Any:
    """The Django test client, signed in as a member."""
    client.force_login(member)
    return client


@pytest.fixture
def as_curator(client: Any, curator: Any) -> Any:
    """The Django test client, signed in as a curator."""
    client.force_login(curator)
    return client


@pytest.fixture
def compliance(db: None) -> Any:
    return make_user("cora", groups=("compliance",))


@pytest.fixture
def as_compliance(client: Any, compliance: Any) -> Any:
    """The Django test client, signed in as a compliance person."""
    client.force_login(compliance)
    return client


@pytest.fixture
def trail(db: None, api: APIClient) -> Trail:
    """Three selections by agent support-bot, a tool-call check, a key made."""
    return make_audit_trail(api)


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def as_user(api: APIClient) -> Callable[[Any], APIClient]:
    def login(user: Any) -> APIClient:
        api.force_authenticate(user=None)
        api.force_login(user)
        return api

    return login


@pytest.fixture
def with_key(api: APIClient, db: None) -> Callable[..., APIClient]:
    """An API client authenticated by a real bearer key of the given scope."""

    def make(scope: str, name: str | None = None, **options: Any) -> APIClient:
        key = make_client_key(name or f"{scope}-client", scope, **options)
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        return api

    return make


def worker_env() -> dict[str, str]:
    """The environment of a worker that talks to the test database."""
    env = dict(os.environ)
    db = settings.DATABASES["default"]
    host = db["HOST"]
    env["DATABASE_URL"] = (
        f"postgresql://{db['USER']}:{db['PASSWORD']}@/{db['NAME']}?host={host}"
        if str(host).startswith("/")
        else f"postgresql://{db['USER']}:{db['PASSWORD']}@{host}:{db['PORT']}/{db['NAME']}"
    )
    env.setdefault("QUIVER_JOB_LEASE_S", "4")
    env.setdefault("QUIVER_SWEEP_S", "2")
    return env


# Every queue the app routes to (config/settings.py): a test's worker takes them
# all unless the test asks for some, so no task is ever left unconsumed.
QUEUES = "quiver,learning"


def start_worker(
    name: str, extra_env: dict[str, str] | None = None, *, queues: str = QUEUES
) -> subprocess.Popen[bytes]:
    """A real `celery worker` process on the test database and the test broker."""
    env = {**worker_env(), **(extra_env or {})}
    name = f"{name}{XDIST}"
    log = open(ROOT / ".quiver" / "test" / f"worker-{name}.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues,
         "--concurrency", "1", "--loglevel", "INFO", "--hostname", f"{name}@%h",
         "--without-mingle", "--without-gossip"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    wait_until(lambda: _pings(f"{name}@"), timeout=60, what=f"worker {name} to start")
    return process


def _pings(prefix: str) -> bool:
    from config.celery import app

    replies = app.control.ping(timeout=0.5) or []
    return any(name.startswith(prefix) for reply in replies for name in reply)


def stop_worker(process: subprocess.Popen[bytes], *, kill: bool = False) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_until(
    condition: Callable[[], Any], *, timeout: float = 60, what: str = "condition"
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture(scope="session")
def purged_broker() -> None:
    from config.celery import app

    app.control.purge()


@pytest.fixture
def celery_worker(
    transactional_db: None, purged_broker: None
) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker process for one test (integration tests need committed data)."""
    process = start_worker("w1")
    try:
        yield process
    finally:
        stop_worker(process)


@pytest.fixture(scope="module")
def web_url(
    request: Any, django_db_setup: None, django_db_blocker: Any
) -> Iterator[str]:
    """gunicorn serving Quiver as ``make run`` does (the API and /mcp), on the
    test database, for the whole module (its log is named after the module)."""
    from tests.outages import running_web

    name = request.module.__name__.rsplit(".", 1)[-1]
    with running_web(worker_env(), name) as url:
        yield url


@pytest.fixture(scope="module")
def module_upstream() -> Iterator[Any]:
    """A real upstream MCP server (tests/upstream.py) for the whole module."""
    from tests.upstream import running_upstream

    with running_upstream() as upstream:
        yield upstream


def answers_http(url: str) -> bool:
    """Whether something serves HTTP at ``url`` (any answer counts)."""
    import httpx

    try:
        httpx.post(url, json={}, timeout=1)
    except httpx.TransportError:
        return False
    return True


@pytest.fixture
def notes_url() -> Iterator[str]:
    """examples/notes_server.py, the approvals tutorial's upstream, on a free
    port: its /mcp URL."""
    from tests.upstream import free_port

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "examples" / "notes_server.py"),
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until(lambda: answers_http(url), timeout=30, what="the notes server")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real HTTP receiver for webhooks (tests/receiver.py)."""
    with running_receiver() as found:
        yield found
