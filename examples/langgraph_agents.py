"""Two LangGraph agents on Quiver, each with a scripted chat model (no LLM key).

- `mcp`: a LangGraph agent loop (model node, `ToolNode`) whose tools are Quiver's
  `/mcp`, loaded by `langchain-mcp-adapters`' `MultiServerMCPClient`: the model
  searches with `search_tools`, reads the answer's text (each tool's name, why,
  arguments) and runs the first tool found with `call_tool`.
- `bigtool`: a `langgraph-bigtool` agent whose tool retrieval is Quiver's
  selection (`quiver_client.langgraph`): the model retrieves tools for the task,
  bigtool binds the ones Quiver picked, and the model calls the first; the call
  runs through Quiver's API.

Each prints what the model found and its answer. Put a real chat model
(`ChatOpenAI(...)`, ...) in `scripted`'s place and nothing else changes.

Run it against `make run` with an agent key, in a venv with LangGraph
(`pip install langgraph langchain-mcp-adapters langgraph-bigtool ./client`;
`make test` uses .quiver/frameworks/venv); after the tutorial "An MCP server
behind Quiver, with approvals" the default task adds a note:

    QUIVER_API_KEY=qv_... python examples/langgraph_agents.py mcp
    QUIVER_API_KEY=qv_... python examples/langgraph_agents.py bigtool \\
        "weather forecast for a city" '{"city": "Paris"}'
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph_bigtool import create_agent
from quiver_client import Quiver
from quiver_client.langgraph import retrieve_tools, tool_registry

TASK = "add a note to the notes", {"text": "Buy milk"}
Turn = Callable[[list[BaseMessage], list[str]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """A chat model whose every answer is ``turn(messages, bound tool names)``."""

    turn: Turn
    tools: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        names = [convert_to_openai_tool(tool)["function"]["name"] for tool in tools]
        return self.model_copy(update={"tools": names})

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self.turn(messages, self.tools)
        return ChatResult(generations=[ChatGeneration(message=message)])


def call(name: str, arguments: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": arguments, "id": name}])


def mcp_turns(task: str, arguments: dict[str, Any]) -> Turn:
    """Search; read the found tools from the answer's text (what a model reads);
    call the first with call_tool; answer what it said."""

    def turn(messages: list[BaseMessage], tools: list[str]) -> AIMessage:
        said = [m for m in messages if isinstance(m, ToolMessage)]
        if not said:
            return call("search_tools", {"query": task})
        text = said[-1].text
        if len(said) == 1:
            names = re.findall(r"^- (\S+) \(", text, re.M)
            print("found:", ", ".join(names))
            selection = re.match(r"selection (\S+) ", text)
            assert names and selection, text
            found = {"name": names[0], "arguments": arguments}
            return call("call_tool", {**found, "selection_id": selection[1]})
        return AIMessage(f"The tool answered: {text}")

    return turn


def bigtool_turns(task: str, arguments: dict[str, Any]) -> Turn:
    """Retrieve tools for the task; call the first tool bigtool bound; answer."""

    def turn(messages: list[BaseMessage], tools: list[str]) -> AIMessage:
        said = [m for m in messages if isinstance(m, ToolMessage)]
        if not said:
            return call("retrieve_tools", {"query": task})
        if len(said) == 1:
            found = [name for name in tools if name != "retrieve_tools"]
            print("found:", ", ".join(found))
            return call(found[0], arguments)
        return AIMessage(f"The tool answered: {said[-1].text}")

    return turn


async def mcp_agent(url: str, key: str, task: str, arguments: dict[str, Any]) -> None:
    scripted = ScriptedChatModel(turn=mcp_turns(task, arguments))
    # --8<-- [start:mcp]
    client = MultiServerMCPClient(
        {
            "quiver": {
                "transport": "streamable_http",
                "url": f"{url}/mcp",
                "headers": {"Authorization": f"Bearer {key}"},
            }
        }
    )
    tools = await client.get_tools()  # search_tools, get_tool_details, call_tool
    model = scripted.bind_tools(tools)

    async def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", think)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    agent = graph.compile()
    answer = await agent.ainvoke({"messages": [("user", task)]})
    print(answer["messages"][-1].text)
    # --8<-- [end:mcp]


def bigtool_agent(url: str, key: str, task: str, arguments: dict[str, Any]) -> None:
    scripted = ScriptedChatModel(turn=bigtool_turns(task, arguments))
    # --8<-- [start:bigtool]
    quiver = Quiver(url, key=key)
    offered: dict[str, str] = {}  # each tool's selection, so its calls name it
    agent = create_agent(
        scripted,
        tool_registry(quiver, offered=offered),  # the catalog's tools, via Quiver
        retrieve_tools_function=retrieve_tools(quiver, limit=2, offered=offered),
    ).compile()
    answer = agent.invoke({"messages": [("user", task)]})
    print(answer["messages"][-1].text)
    # --8<-- [end:bigtool]


if __name__ == "__main__":
    KEY = os.environ.get("QUIVER_API_KEY", "")
    if not KEY or len(sys.argv) < 2 or sys.argv[1] not in ("mcp", "bigtool"):
        print("Usage: QUIVER_API_KEY=<agent key> langgraph_agents.py mcp|bigtool")
        sys.exit(2)
    task, arguments = (
        (sys.argv[2], json.loads(sys.argv[3])) if len(sys.argv) > 3 else TASK
    )
    url = os.environ.get("QUIVER_URL", "http://127.0.0.1:8000").rstrip("/")
    if sys.argv[1] == "mcp":
        asyncio.run(mcp_agent(url, KEY, task, arguments))
    else:
        bigtool_agent(url, KEY, task, arguments)
