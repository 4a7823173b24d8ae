"""What the frameworks' scripts talk to: the module's gunicorn (``web_url``,
as ``make run`` serves Quiver), a real upstream MCP server as the default
catalog's source (``module_upstream``), and an agent key."""

from __future__ import annotations

import pytest

from catalog.services import ensure_default_catalog
from tests.calls.conftest import link_source
from tests.factories import embed_now, make_client_key
from tests.frameworks.runner import Live
from tests.upstream import Upstream


@pytest.fixture
def live(transactional_db: None, web_url: str, module_upstream: Upstream) -> Live:
    """The upstream's tools as ``weather.*`` in the default catalog (read-only
    ones run at once, the others wait for approval), embedded; an agent key."""
    with module_upstream.lock:
        module_upstream.calls.clear()
    link_source(module_upstream)
    embed_now(ensure_default_catalog())
    key = make_client_key("framework-agent", "agent")
    return Live(web_url, key, module_upstream)
