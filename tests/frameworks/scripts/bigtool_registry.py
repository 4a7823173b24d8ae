"""quiver_client.langgraph's tool registry in the real LangChain: which tools
it holds, and a call that waits for approval: again at once (still waiting),
again once the test approved it (it runs), and again (the approval is used: it
asks anew). Prints one JSON line per step; waits for a line on stdin
between the two calls. Run by tests/frameworks in the frameworks' venv with
QUIVER_URL and QUIVER_API_KEY set."""

from __future__ import annotations

import json
import os
import sys

from quiver_client import Quiver
from quiver_client.langgraph import retrieve_tools, tool_registry


def say(**step: object) -> None:
    print(json.dumps(step), flush=True)


def main() -> None:
    quiver = Quiver(os.environ["QUIVER_URL"], key=os.environ["QUIVER_API_KEY"])
    offered: dict[str, str] = {}
    registry = tool_registry(quiver, offered=offered)
    retrieved = retrieve_tools(quiver, limit=3, offered=offered)(
        "delete a file from the shared drive"
    )
    delete = registry["weather.delete_file"]
    say(
        registry=sorted(registry),
        model_names=sorted(tool.name for tool in registry.values()),
        retrieved=retrieved,
        offered=offered,
    )
    arguments = {"path": "/srv/old.log"}
    say(first=delete.invoke(arguments))
    say(waiting=delete.invoke(arguments))
    sys.stdin.readline()  # the test approves the call meanwhile
    say(again=delete.invoke(arguments))
    say(used=delete.invoke(arguments))
    say(refused=delete.invoke({"path": ""}))


if __name__ == "__main__":
    main()
