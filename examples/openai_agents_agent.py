"""An OpenAI Agents SDK agent that finds and runs tools through Quiver's MCP endpoint.

The agent's MCP server is Quiver's `/mcp` (`MCPServerStreamableHttp`): the SDK lists
its three tools, `search_tools`, `get_tool_details` and `call_tool`, and runs the
model's calls of them. The model here is scripted (a `Model` playing fixed turns,
no LLM key): it searches for the task, calls the best tool found with the arguments
given, and answers with what the tool said. Give the agent a real model
(`model="gpt-5"`, ...) and nothing else changes.

Run it against `make run` with an agent key, in a venv with the SDK
(`pip install openai-agents ./client`; `make test` uses .quiver/frameworks/venv);
after the tutorial "An MCP server behind Quiver, with approvals" the default task
adds a note through the notes server:

    QUIVER_API_KEY=qv_... python examples/openai_agents_agent.py
    QUIVER_API_KEY=qv_... python examples/openai_agents_agent.py \\
        "weather forecast for a city" '{"city": "Paris"}'
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

TASK = "add a note to the notes", {"text": "Buy milk"}


class ScriptedModel(Model):
    """A model that searches Quiver for the task, calls the first tool found
    with ``arguments`` (as a model would write them) and answers what the call
    gave."""

    def __init__(self, task: str, arguments: dict[str, Any]) -> None:
        self.task, self.arguments = task, arguments

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        *args: Any,
        **kwargs: Any,  # output schema, handoffs, tracing...: unused here
    ) -> ModelResponse:
        listed = [tool.name for tool in tools]  # what the SDK listed from /mcp
        assert "search_tools" in listed, listed
        outputs = [
            item["output"]
            for item in (input if isinstance(input, list) else [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if not outputs:
            return self._call("search_tools", {"query": self.task})
        if len(outputs) == 1:  # search_tools' structured content, as JSON
            found = json.loads(outputs[0])
            print("found:", ", ".join(t["name"] for t in found["tools"]))
            call = {
                "name": found["tools"][0]["name"],
                "arguments": self.arguments,
                "selection_id": found["selection_id"],
            }
            return self._call("call_tool", call)
        # The call's result; an error result (a refusal, a pending approval)
        # comes as its text.
        return self._say(f"The tool answered: {json.dumps(outputs[-1])}")

    def _call(self, name: str, arguments: dict[str, Any]) -> ModelResponse:
        call = ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{name}",
            name=name,
            arguments=json.dumps(arguments),
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def _say(self, text: str) -> ModelResponse:
        message = ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


async def main(url: str, key: str, task: str, arguments: dict[str, Any]) -> None:
    model = ScriptedModel(task, arguments)
    # --8<-- [start:connect]
    async with MCPServerStreamableHttp(
        params={"url": f"{url}/mcp", "headers": {"Authorization": f"Bearer {key}"}},
        name="quiver",
        cache_tools_list=True,  # the same three tools for every key
        use_structured_content=True,  # search_tools' JSON: names, inputSchema...
    ) as quiver:
        agent = Agent(name="assistant", model=model, mcp_servers=[quiver])
        result = await Runner.run(agent, task)
    print(result.final_output)
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
    set_tracing_disabled(True)  # traces go to OpenAI's servers otherwise
    url = os.environ.get("QUIVER_URL", "http://127.0.0.1:8000").rstrip("/")
    asyncio.run(main(url, KEY, task, arguments))
