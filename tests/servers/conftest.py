"""Official MCP servers as Quiver's sources (issue 31), each started once for
the package's tests, installed by the project's files (`make servers`, the dev
extra):

* ``@modelcontextprotocol/server-everything`` (npm, tests/servers/node_modules)
  over streamable HTTP (``everything_url``) and over stdio;
* ``mcp-server-time`` and ``mcp-server-git`` (PyPI, Quiver's venv) over stdio,
  git on a throwaway repository the fixture makes.

``official`` adds them to the default catalog as a person would (the HTTP one by
the API's service, the stdio ones by the settings file and ``add_stdio_source``),
runs each queued first sync here as a worker would, embeds the catalog and makes
the keys, all committed once for the package (both modules: one setup, where
pytest-xdist does not hand them to two processes); each test then runs in a
transaction rolled back after it, and the package ends with the database as it
was before (``committed_for_the_package``) and the pooled upstream processes
stopped. ``quiver_url`` is gunicorn serving Quiver as ``make run`` does, with the
same settings file, for /mcp (once per module that asks for it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from calls.upstream import pool
from catalog.models import Catalog
from catalog.services import ensure_default_catalog
from jobs.services import claim_job
from sources.models import Source
from sources.services import SourceAdded, add_stdio_source, create_source
from sources.sync import run_sync
from tests.conftest import answers_http, wait_until, worker_env
from tests.factories import embed_now, make_client_key, make_user
from tests.outages import running_web
from tests.upstream import free_port

HERE = Path(__file__).resolve().parent
EVERYTHING = (
    HERE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
)
BIN = Path(sys.executable).parent
STDIO_SECRET = "sk-everything-5d1c9e7a3b"


def everything_command(transport: str) -> list[str]:
    """server-everything as its package runs it: ``node dist/index.js <transport>``."""
    node = shutil.which("node")
    assert node, "node is not on PATH (Node 20 is on the machine image)"
    assert (EVERYTHING / "index.js").exists(), "run `make servers` first"
    return [node, str(EVERYTHING / "index.js"), transport]


def stdio_entries(repo: Path) -> dict[str, dict[str, Any]]:
    """The settings file's stdio entries, as the walk-through writes them."""
    node, script, _ = everything_command("stdio")
    return {
        "everything": {
            "command": node,
            "args": [script, "stdio"],
            # get-env answers its whole environment: this must never be shown.
            "env": {"EVERYTHING_API_TOKEN": STDIO_SECRET},
        },
        # Not added by ``official``: the test of a server asking anyway adds it.
        "asker": {"command": node, "args": [str(HERE / "asking_server.mjs")]},
        "time": {
            "command": str(BIN / "mcp-server-time"),
            "args": ["--local-timezone", "Europe/Paris"],
        },
        "git": {
            "command": str(BIN / "mcp-server-git"),
            "args": ["--repository", str(repo)],
        },
    }


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return done.stdout


def make_repo(repo: Path) -> Path:
    """A throwaway repository: two commits, a staged change, an unstaged one."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "quiver-tests@example.com")
    git(repo, "config", "user.name", "Quiver Tests")
    (repo / "plants.txt").write_text("water the plants\n")
    git(repo, "add", "plants.txt")
    git(repo, "commit", "-q", "-m", "Plants to water")
    (repo / "plants.txt").write_text("water the plants\nrepot the fern\n")
    git(repo, "commit", "-q", "-am", "Repot the fern too")
    (repo / "staged.txt").write_text("staged line\n")
    git(repo, "add", "staged.txt")
    (repo / "plants.txt").write_text("water the plants\nrepot the fern\nfeed\n")
    return repo


@pytest.fixture(scope="package")
def everything_url() -> Iterator[str]:
    """server-everything over streamable HTTP on a free loopback port."""
    port = free_port()
    server = subprocess.Popen(
        everything_command("streamableHttp"),
        env={"PATH": "/usr/bin:/bin", "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until(lambda: answers_http(url), timeout=30, what="server-everything")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="package")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("git") / "garden")


@pytest.fixture(scope="package")
def sources_file(tmp_path_factory: pytest.TempPathFactory, repo: Path) -> str:
    path = tmp_path_factory.mktemp("settings") / "sources.json"
    path.write_text(json.dumps({"stdio": stdio_entries(repo)}))
    return str(path)


@dataclass
class Official:
    """What the package's tests share: the catalog, its sources by name, the
    first syncs' jobs, and the keys (an agent that may be offered unsafe tools,
    an admin)."""

    catalog: Catalog
    sources: dict[str, Source]
    jobs: dict[str, Any]
    agent_key: str
    admin_key: str
    approver: Any
    repo: Path
    extra: dict[str, Any] = field(default_factory=dict)


def first_sync(added: SourceAdded) -> Any:
    """The queued first sync, run here as a worker runs it."""
    claimed = claim_job(added.sync_job.pk)
    assert claimed is not None
    return run_sync(claimed)


def _add_all(catalog: Catalog, everything_url: str) -> dict[str, SourceAdded]:
    admin = make_user("official-admin", superuser=True)
    added = {
        "everything-http": create_source(
            catalog, name="everything-http", url=everything_url, actor=admin
        )
    }
    for name in ("everything", "time", "git"):
        added[name] = add_stdio_source(catalog, name=name, stdio_name=name)
    return added


@contextmanager
def committed_for_the_package() -> Iterator[None]:
    """Rows committed inside are gone after, and the database is as it was
    before: the rows the migrations made (the default catalog, the groups and
    their permissions) are put back, since the database tests that follow in
    this process rely on them (a flush alone empties them too). As Django's
    serialized rollback does, with the pooled upstream processes stopped."""
    before = connection.creation.serialize_db_to_string()
    try:
        yield
    finally:
        work = pool()
        work.submit(work.close_all(), 10)
        call_command(
            "flush",
            interactive=False,
            verbosity=0,
            reset_sequences=False,
            inhibit_post_migrate=True,
        )
        connection.creation.deserialize_db_from_string(before)


@pytest.fixture(scope="package")
def official(
    django_db_setup: None,
    django_db_blocker: Any,
    everything_url: str,
    sources_file: str,
    repo: Path,
) -> Iterator[Official]:
    """The four sources added, synced and embedded, committed for the package."""
    with (
        override_settings(QUIVER_SOURCES_FILE=sources_file),
        django_db_blocker.unblock(),
        committed_for_the_package(),
    ):
        catalog = ensure_default_catalog()
        added = _add_all(catalog, everything_url)
        jobs = {name: first_sync(one) for name, one in added.items()}
        embed_now(catalog)
        yield Official(
            catalog=catalog,
            sources={n: Source.objects.get(pk=a.source.pk) for n, a in added.items()},
            jobs=jobs,
            agent_key=make_client_key("official-agent", "agent", allow_unsafe=True),
            admin_key=make_client_key("official-ops", "admin"),
            approver=make_user("official-approver", groups=("approver",)),
            repo=repo,
        )


@pytest.fixture(scope="module")
def quiver_url(official: Official, sources_file: str) -> Iterator[str]:
    """gunicorn serving Quiver (the API and /mcp) as ``make run`` does, on the
    test database, with the package's settings file."""
    env = {**worker_env(), "QUIVER_SOURCES_FILE": sources_file}
    with running_web(env, "official-servers") as url:
        yield url
