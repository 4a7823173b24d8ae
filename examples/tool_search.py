"""Client-side tool search with Quiver, for Anthropic and OpenAI, with no LLM key.

Run it against `make run` with an agent key:

    make manage ARGS="create_api_client example --scope agent --all-catalogs"
    QUIVER_API_KEY=<the key> .venv/bin/python examples/tool_search.py

It plays the model's turns from a fixed transcript: where a real agent would send
`tools` to the provider and read back a `tool_use` (Anthropic) or a
`tool_search_call` (OpenAI), it takes that block from TRANSCRIPT, answers it with
Quiver exactly as an agent would, and prints what the agent would send next.
Swap the transcript for real `client.messages.create(...)` /
`client.responses.create(...)` calls and nothing else changes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from quiver_client import Quiver

# What the model said, turn by turn (recorded shapes of the providers' answers).
TRANSCRIPT: dict[str, Any] = {
    "anthropic_search": {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "search_tools",
        "input": {"query": "send an email to a colleague", "max_results": 3},
    },
    "openai_search": {
        "type": "tool_search_call",
        "id": "ts_01",
        "call_id": "call_01",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": "current weather in a city", "max_results": 3},
    },
}


def show(title: str, value: Any) -> None:
    print(f"--- {title}")
    print(json.dumps(value, indent=2)[:2000])


def anthropic_turn(quiver: Quiver, catalog: str | None) -> list[str]:
    tools = quiver.anthropic_tools(catalog)
    deferred = [t for t in tools if t.get("defer_loading")]
    print(f"Anthropic: {len(deferred)} deferred tools + {tools[-1]['name']!r}")
    # messages.create(model=..., tools=tools, messages=[...]) -> this tool_use block:
    block = TRANSCRIPT["anthropic_search"]
    result = quiver.anthropic_tool_result(block, catalog)
    show("tool_result for the model's search_tools call", result)
    # The next messages.create(...) sends [..., {"role": "user", "content": [result]}];
    # the API loads the referenced tools and the model calls one of them.
    return [ref["tool_name"] for ref in result["content"] if "tool_name" in ref]


def openai_turn(quiver: Quiver, catalog: str | None) -> list[str]:
    declaration = quiver.openai_tool_search()
    show("OpenAI tools=[...] entry", declaration)
    # responses.create(model=..., tools=[declaration], input=...) -> this item:
    item = TRANSCRIPT["openai_search"]
    output = quiver.openai_tool_search_output(item, catalog)
    show("tool_search_output for the model's tool_search_call", output)
    # The next responses.create(...) sends input=[..., item, output].
    return [tool["name"] for tool in output["tools"]]


def check_a_call(quiver: Quiver, name: str, catalog: str | None) -> None:
    # The model then calls a tool, here with no arguments: Quiver says what is wrong.
    message = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_02", "name": name, "input": {}}],
    }
    answer = quiver.validate_tool_calls(message, format="anthropic", catalog=catalog)
    call = answer["calls"][0]
    print(f"--- the model's call of {name}: valid={call['valid']} {call['hint']}")


def main() -> int:
    url = os.environ.get("QUIVER_URL", "http://127.0.0.1:8000")
    key = os.environ.get("QUIVER_API_KEY")
    if not key:
        print('set QUIVER_API_KEY (make manage ARGS="create_api_client ...")')
        return 2
    catalog = os.environ.get("QUIVER_CATALOG") or None
    with Quiver(url, key) as quiver:
        referenced = anthropic_turn(quiver, catalog)
        found = openai_turn(quiver, catalog)
        if referenced:
            check_a_call(quiver, referenced[0], catalog)
    print(f"Anthropic search referenced: {', '.join(referenced) or '(none)'}")
    print(f"OpenAI search returned: {', '.join(found) or '(none)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
