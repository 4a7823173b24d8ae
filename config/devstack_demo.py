"""``make run``'s demo MCP server: the settings file naming it, and its source.

``make run`` writes ``demo-sources.json`` in its state directory at every start
(the interpreter's and the checkout's paths as they are now) and points
``QUIVER_SOURCES_FILE`` at it, unless the operator set that variable to a file of
their own, which is never touched. After the bootstrap, ``add_demo_source`` puts
the server behind the demo catalog's tools, once (see that command)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ENTRY = "demo"


def demo_sources_file(state_dir: Path, env: dict[str, str], base_dir: Path) -> None:
    """Name the demo server in a settings file of ``make run``'s own, and use it."""
    if env.get("QUIVER_SOURCES_FILE"):
        return
    entry = {
        "command": sys.executable,
        "args": ["-m", "catalog.demo.server"],
        "cwd": str(base_dir),
    }
    path = state_dir / "demo-sources.json"
    path.write_text(json.dumps({"stdio": {ENTRY: entry}}, indent=2) + "\n")
    env["QUIVER_SOURCES_FILE"] = str(path)
