"""The tests' real upstream MCP server (tests/upstream.py) in a process of its
own, for the calls benches: prints its URL, serves until stdin closes. An
argument, when given, is the page size of its ``tools/list`` (3 by default, as
the tests use it)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.upstream import Upstream, running_upstream  # noqa: E402

if __name__ == "__main__":
    page_size = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with running_upstream(Upstream(page_size=page_size)) as upstream:
        print(upstream.url, flush=True)
        sys.stdin.read()
