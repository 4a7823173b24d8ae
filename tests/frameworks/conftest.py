"""One gunicorn (as `make run` serves Quiver: the API and /mcp) per module on
the test database, a real upstream MCP server as the default catalog's source,
and an agent key: what the frameworks' scripts talk to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from catalog.services import ensure_default_catalog
from tests.calls.conftest import link_source
from tests.conftest import worker_env
from tests.factories import embed_now, make_client_key
from tests.frameworks.runner import Live
from tests.outages import running_web
from tests.upstream import Upstream, running_upstream


@pytest.fixture(scope="module")
def server_url(
    request: Any, django_db_setup: None, django_db_blocker: Any
) -> Iterator[str]:
    with running_web(worker_env(), request.module.__name__.rsplit(".")[-1]) as url:
        yield url


@pytest.fixture(scope="module")
def module_upstream() -> Iterator[Upstream]:
    with running_upstream() as upstream:
        yield upstream


@pytest.fixture
def live(transactional_db: None, server_url: str, module_upstream: Upstream) -> Live:
    """The upstream's tools as ``weather.*`` in the default catalog (read-only
    ones run at once, the others wait for approval), embedded; an agent key."""
    with module_upstream.lock:
        module_upstream.calls.clear()
    link_source(module_upstream)
    embed_now(ensure_default_catalog())
    key = make_client_key("framework-agent", "agent")
    return Live(server_url, key, module_upstream)
