"""The tests' real upstream MCP server (tests/upstream.py) in a process of its
own, for bench/call_overhead.py: prints its URL, serves until stdin closes."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.upstream import running_upstream  # noqa: E402

if __name__ == "__main__":
    with running_upstream() as upstream:
        print(upstream.url, flush=True)
        sys.stdin.read()
