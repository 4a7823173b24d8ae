"""Agent frameworks as Quiver's clients, each a real agent loop with its own
scripted model (no LLM key, no network but the loopback): Pydantic AI
(``MCPToolset``, ``FunctionModel``), the OpenAI Agents SDK
(``MCPServerStreamableHttp``, a scripted ``Model``) and LangGraph
(``langchain-mcp-adapters``' ``MultiServerMCPClient``; a ``langgraph-bigtool``
agent whose retrieval is Quiver's selection), with the mcp 1.x client they pin.

Each runs as the docs show it: examples/<framework>.py in the frameworks' venv
(tests/frameworks/runner.py) against Quiver served as ``make run`` serves it,
with a real upstream MCP server as the catalog's source (conftest.py). This side
checks what the script printed against the audit log (one selection per search,
a call's start and outcome per call) and the calls that reached the upstream."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from catalog.services import ensure_default_catalog
from jobs.choices import JobState
from sources.services import create_source
from tests.factories import embed_now, make_client_key
from tests.frameworks.runner import Live, call_rows, events, run_example
from tests.sources.conftest import sync

FORECAST = ("weather forecast for a city", '{"city": "Paris", "days": 2}')
UPSTREAM_ANSWER = "day 1: sunny, 21 C"
# Every test transactional: the module stays whole on one xdist process, with
# one gunicorn (tests/scheduling.py).
pytestmark = pytest.mark.django_db(transaction=True)


def answered(out: str) -> str:
    """What the agent's last message said the tool answered."""
    assert "The tool answered: " in out, out
    return out.rsplit("The tool answered: ", 1)[1]


def searched_and_called(live: Live, calls: list[str], channel: str) -> None:
    """The audit holds one selection (the agent's one search) and, per call
    that reached the upstream, its start and its outcome (ran), all asked over
    ``channel``; nothing else."""
    selections = events("selection")
    assert len(selections) == 1
    tool_calls = events("tool_call")
    rows = [*selections, *tool_calls]
    assert [row.input["channel"] for row in rows] == [channel] * len(rows)
    runs = call_rows()
    assert len(tool_calls) == 2 * len(runs)
    assert [end.output["outcome"] for _, end in runs] == ["ran"] * len(calls)
    assert live.upstream is not None
    assert [call.name for call in live.upstream.calls] == calls


@dataclass(frozen=True)
class Framework:
    """How the docs run one framework's agent: ``examples/<script>.py *args``,
    searching over ``channel`` (``mcp``: /mcp's search_tools; ``api``: POST
    /select) for at most ``offered`` tools."""

    script: str
    args: tuple[str, ...] = ()
    channel: str = "mcp"
    offered: int = 3


FRAMEWORKS = {
    "pydantic-ai": Framework("pydantic_ai_agent"),
    "openai-agents": Framework("openai_agents_agent"),
    "langgraph-mcp-adapters": Framework("langgraph_agents", ("mcp",)),
    "langgraph-bigtool": Framework("langgraph_agents", ("bigtool",), "api", 2),
}
EACH = pytest.mark.parametrize("framework", FRAMEWORKS.values(), ids=FRAMEWORKS)


@EACH
def test_the_agent_finds_the_tool_and_gets_the_upstreams_answer(live, framework):
    out = run_example(framework.script, live, *framework.args, *FORECAST)
    assert re.search(r"^found: weather_get_forecast, ", out, re.M), out
    assert UPSTREAM_ANSWER in answered(out)
    searched_and_called(live, ["get_forecast"], framework.channel)
    [selection], [(tool_call, _ran)] = events("selection"), call_rows()
    assert len(selection.output["tools"]) == framework.offered
    assert tool_call.input["selection_id"] == str(selection.selection_id)
    [call] = live.upstream.calls
    assert call.arguments == {"city": "Paris", "days": 2}


@EACH
def test_a_call_waiting_for_approval_reaches_the_model_as_pending(live, framework):
    task = ("delete a file from the shared drive", '{"path": "/srv/old.log"}')
    out = run_example(framework.script, live, *framework.args, *task)
    assert re.search(r"^found: weather_delete_file\b", out, re.M), out
    assert "pending_approval" in answered(out)
    assert live.upstream.calls == []
    [tool_call] = events("tool_call")
    assert tool_call.output["outcome"] == "pending"
    assert tool_call.input["channel"] == framework.channel


@pytest.fixture
def notes(transactional_db: None, web_url: str, notes_url: str, admin_user) -> Live:
    """The approvals tutorial's state: examples/notes_server.py as the default
    catalog's source ``notes``, synced and embedded; an agent key."""
    source = create_source(
        ensure_default_catalog(), name="notes", url=notes_url, actor=admin_user
    ).source
    assert sync(source).state == JobState.SUCCEEDED
    embed_now(ensure_default_catalog())
    return Live(web_url, make_client_key("framework-agent", "agent"))


def test_the_examples_default_task_adds_a_note_as_the_docs_say(notes):
    """docs/tutorials/connect-frameworks.md: after the approvals tutorial, the
    examples' default task adds a note through the notes server."""
    out = run_example("pydantic_ai_agent", notes)
    assert re.search(r"^found: notes__add_note, ", out, re.M), out
    assert answered(out).strip() == "3"  # the server starts with notes 1 and 2
    [(tool_call, ran)] = call_rows()
    assert ran.output["outcome"] == "ran"
    assert tool_call.input["arguments"] == {"text": "Buy milk"}
