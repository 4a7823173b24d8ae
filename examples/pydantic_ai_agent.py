"""A Pydantic AI agent that finds and runs tools through Quiver's MCP endpoint.

The agent's toolset is Quiver's `/mcp` (Pydantic AI's `MCPToolset`): three tools,
`search_tools`, `get_tool_details` and `call_tool`, whatever the catalog's size.
Its model here is scripted (Pydantic AI's `FunctionModel`, no LLM key): it searches
for the task, calls the best tool found with the arguments given, and answers
with what the tool said. Put a real model in its place (`"openai:gpt-5"`, ...) and
nothing else changes.

Run it against `make run` with an agent key, in a venv with Pydantic AI
(`pip install "pydantic-ai-slim[mcp]" ./client`; `make test` uses
.quiver/frameworks/venv); after the tutorial "An MCP server behind Quiver, with
approvals" the default task adds a note through the notes server:

    QUIVER_API_KEY=qv_... python examples/pydantic_ai_agent.py
    QUIVER_API_KEY=qv_... python examples/pydantic_ai_agent.py \\
        "weather forecast for a city" '{"city": "Paris"}'
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

TASK = "add a note to the notes", {"text": "Buy milk"}


def scripted_model(task: str, arguments: dict[str, Any]) -> FunctionModel:
    """A model that searches Quiver for ``task``, calls the first tool found
    with ``arguments`` (as a model would write them) and answers what the call
    gave: the tool's result, or the error (a refusal, a pending approval) that
    Pydantic AI hands back to the model as a retry prompt."""

    def turn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        said = messages[-1].parts  # the last request: the user, or tool returns
        returned = [p for p in said if isinstance(p, ToolReturnPart | RetryPromptPart)]
        if not returned:
            return ModelResponse([ToolCallPart("search_tools", {"query": task})])
        last = returned[0]
        if last.tool_name == "search_tools" and isinstance(last, ToolReturnPart):
            found = last.content  # search_tools' structured content
            print("found:", ", ".join(t["name"] for t in found["tools"]))
            call = {
                "name": found["tools"][0]["name"],
                "arguments": arguments,
                "selection_id": found["selection_id"],
            }
            return ModelResponse([ToolCallPart("call_tool", call)])
        answer = json.dumps(last.content)
        return ModelResponse([TextPart(f"The tool answered: {answer}")])

    return FunctionModel(turn)


async def main(url: str, key: str, task: str, arguments: dict[str, Any]) -> None:
    model = scripted_model(task, arguments)
    # --8<-- [start:connect]
    quiver = MCPToolset(f"{url}/mcp", headers={"Authorization": f"Bearer {key}"})
    agent = Agent(model, toolsets=[quiver])
    async with agent:  # one connection to Quiver for the whole run
        result = await agent.run(task)
    print(result.output)
    # --8<-- [end:connect]


if __name__ == "__main__":
    KEY = os.environ.get("QUIVER_API_KEY", "")
    if not KEY:
        print(
            "Set QUIVER_API_KEY to an agent key (docs/tutorials/connect-frameworks.md)."
        )
        sys.exit(2)
    task, arguments = (
        (sys.argv[1], json.loads(sys.argv[2])) if len(sys.argv) > 2 else TASK
    )
    url = os.environ.get("QUIVER_URL", "http://127.0.0.1:8000").rstrip("/")
    asyncio.run(main(url, KEY, task, arguments))
