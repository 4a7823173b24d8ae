"""How the suite is shared between pytest-xdist processes (``make test`` runs two).

Two rules, both about what a test may assume:

- pytest-django orders the database tests before the transactional ones, whose
  flush empties every table, data migrations' rows included (the groups, the
  default catalog). Each process must run its tests in that order too, so
  every test is handed out in the order collected, never reordered by size.
- A module whose tests all sit together in that order goes to one process
  whole, so its module fixtures (a trained encoder, an upstream MCP server, a
  browser page) are made once. A module split by that order is handed out test
  by test, like any other.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from xdist.scheduler import LoadScopeScheduling


class InOrderModules(LoadScopeScheduling):
    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        # LoadScopeScheduling hands out the largest scopes first unless told not to.
        config.option.loadscopereorder = False
        self._whole: set[str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        if self._whole is None:
            self._whole = whole_modules(self.collection or [])
        return module if module in self._whole else nodeid


def whole_modules(nodeids: list[str]) -> set[str]:
    """The modules whose tests are one unbroken run of ``nodeids``."""
    runs: Counter[str] = Counter()
    previous = None
    for nodeid in nodeids:
        module = nodeid.split("::", 1)[0]
        if module != previous:
            runs[module] += 1
            previous = module
    return {module for module, count in runs.items() if count == 1}
