"""The gateway's tests share one real upstream MCP server a module
(``module_upstream``, tests/conftest.py), linked afresh to each test's database."""

from __future__ import annotations

import pytest

from tests.calls.conftest import link_source
from tests.upstream import Upstream


@pytest.fixture
def upstream(transactional_db: None, module_upstream: Upstream) -> Upstream:
    """The module's upstream, its calls forgotten, a source of the default catalog."""
    with module_upstream.lock:
        module_upstream.calls.clear()
    link_source(module_upstream)
    return module_upstream
