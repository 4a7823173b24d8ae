"""The official MCP servers behind Quiver, end to end (issue 31):
server-everything over streamable HTTP and stdio, mcp-server-time and
mcp-server-git over stdio. Each is added as a person adds it (its first sync
queued), synced with its hints mapped as documented, found by POST /select and
by search_tools on /mcp, called through POST /tool-calls/execute and /mcp with
the server's result as it gave it, its destructive tool waiting for a person
and then running once, and every call audited."""

from __future__ import annotations

from typing import Any

import pytest

from calls.decisions import approve
from calls.models import Approval
from catalog.models import Tool
from sources.models import SourceTool
from tests.servers.conftest import Official, git
from tests.servers.helpers import call_rows, execute, on_mcp, select, straight

pytestmark = pytest.mark.django_db

EVERYTHING_TOOLS = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
]
GIT_TOOLS = [
    "git_add",
    "git_branch",
    "git_checkout",
    "git_commit",
    "git_create_branch",
    "git_diff",
    "git_diff_staged",
    "git_diff_unstaged",
    "git_log",
    "git_reset",
    "git_show",
    "git_status",
]


def synced(source: str) -> dict[str, Tool]:
    links = SourceTool.objects.filter(source__name=source, gone=False)
    return {link.upstream_name: link.tool for link in links.select_related("tool")}


def flags(tool: Tool) -> tuple[Any, ...]:
    return (
        tool.safe,
        tool.requires_approval,
        tool.risk_level,
        sorted(tool.capabilities),
        sorted(tool.tags),
    )


@pytest.mark.parametrize(
    ("source", "tools"),
    [
        ("everything-http", EVERYTHING_TOOLS),
        ("everything", EVERYTHING_TOOLS),
        ("time", ["convert_time", "get_current_time"]),
        ("git", GIT_TOOLS),
    ],
)
def test_each_server_s_first_sync_brings_its_tools_namespaced(
    official: Official, source, tools
):
    job = official.jobs[source]
    assert job.state == "succeeded", job.errors
    assert sorted(synced(source)) == tools
    tool = synced(source)[tools[0]]
    assert tool.name == f"{source}__{tools[0]}"
    assert official.sources[source].status == "ok"


def test_the_hints_each_server_sends_become_the_documented_flags(official: Official):
    everything, git_tools = synced("everything"), synced("git")
    read_only: tuple[Any, ...] = (True, False, "low", ["idempotent", "read-only"], [])
    assert flags(everything["get-sum"]) == read_only
    assert flags(synced("time")["convert_time"]) == read_only
    assert flags(git_tools["git_log"]) == read_only
    # Not read-only, not destructive, closed world: safe, medium, no approval.
    assert flags(everything["toggle-simulated-logging"]) == (
        True, False, "medium", [], [],
    )  # fmt: skip
    assert flags(git_tools["git_commit"]) == (True, False, "medium", [], [])
    # openWorldHint true: the tag; idempotentHint: the capability.
    assert flags(everything["gzip-file-as-resource"]) == (
        True, False, "medium", ["idempotent"], ["open-world"],
    )  # fmt: skip
    # git_reset says destructiveHint: unsafe, approval, high (fail closed).
    assert flags(git_tools["git_reset"]) == (False, True, "high", ["idempotent"], [])
    assert git_tools["git_reset"].annotations["destructiveHint"] is True


def test_the_schemas_and_output_schemas_are_kept_verbatim(official: Official):
    everything = SourceTool.objects.get(
        source__name="everything", upstream_name="get-structured-content"
    )
    tool = everything.tool
    assert tool.parameters == everything.upstream["inputSchema"]
    assert tool.parameters["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert tool.annotations["outputSchema"] == everything.upstream["outputSchema"]
    log = synced("git")["git_log"].parameters
    assert log is not None
    assert log["properties"]["start_timestamp"]["anyOf"] == [
        {"type": "string"},
        {"type": "null"},
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what time is it now in Tokyo", "time__get_current_time"),
        ("convert 9:30 from Paris time to New York time", "time__convert_time"),
        ("show the commit history of the repository", "git__git_log"),
        ("add two numbers together", "everything__get-sum"),
    ],
)
def test_post_select_finds_the_servers_tools(official: Official, query, expected):
    assert expected in select(official.agent_key, query)[:3]


def test_search_tools_on_mcp_finds_them_too(official: Official, quiver_url):
    async def work(client):
        asked = {"query": "what time is it in Tokyo"}
        found = await client.call_tool("search_tools", asked)
        return found.structured_content

    found = on_mcp(quiver_url, official.agent_key, work)
    by_name = {tool["name"]: tool for tool in found["tools"]}
    assert by_name["time__get_current_time"]["inputSchema"]["required"] == ["timezone"]


def test_the_destructive_git_reset_is_offered_only_to_requests_allowing_unsafe(
    official: Official,
):
    query = "unstage all staged changes in the git repository"
    assert "git__git_reset" not in select(official.agent_key, query)
    unsafe = select(official.agent_key, query, allow_unsafe=True)
    assert "git__git_reset" in unsafe[:3]


def test_a_time_call_runs_with_its_structured_content(official: Official):
    status, answer = execute(
        official.agent_key, "time__get_current_time", {"timezone": "Asia/Tokyo"}
    )

    assert status == 200, answer
    assert answer["outcome"] == "ran" and answer["is_error"] is False
    found = answer["structured_content"]
    assert found["timezone"] == "Asia/Tokyo" and found["datetime"].endswith("+09:00")
    assert answer["content"][0]["type"] == "text"
    started, ran = call_rows(answer["call_id"])
    assert started.output["outcome"] == "started" and ran.output["outcome"] == "ran"


def test_a_server_s_own_error_is_its_error_result(official: Official):
    status, answer = execute(
        official.agent_key, "time__get_current_time", {"timezone": "Mars/Olympus"}
    )
    assert status == 200, answer
    assert answer["outcome"] == "failed" and answer["is_error"] is True
    assert "Invalid timezone" in answer["content"][0]["text"]
    assert call_rows(answer["call_id"])[-1].output["outcome"] == "failed"


def test_arguments_off_the_server_s_schema_never_reach_it(official: Official):
    status, answer = execute(
        official.agent_key, "everything__get-sum", {"a": "one", "b": 2}
    )
    assert status == 400 and answer["outcome"] == "refused"
    assert answer["reason"].startswith("arguments/a:")
    [refused] = call_rows(answer["call_id"])
    assert refused.output["outcome"] == "refused"


@pytest.mark.parametrize("source", ["everything-http", "everything"])
def test_an_image_comes_back_as_the_server_gave_it(
    official: Official, everything_url, source
):
    status, answer = execute(official.agent_key, f"{source}__get-tiny-image", {})

    assert status == 200 and answer["outcome"] == "ran", answer
    given = straight(everything_url, "get-tiny-image", {})
    assert answer["content"] == given["content"]
    assert [block["type"] for block in answer["content"]] == ["text", "image", "text"]
    assert answer["content"][1]["mimeType"] == "image/png"


def test_git_reads_the_throwaway_repository(official: Official):
    repo = str(official.repo)
    status, answer = execute(official.agent_key, "git__git_log", {"repo_path": repo})
    assert status == 200 and answer["outcome"] == "ran", answer
    text = answer["content"][0]["text"]
    assert "Repot the fern too" in text and "Plants to water" in text

    _, staged = execute(official.agent_key, "git__git_diff_staged", {"repo_path": repo})
    assert "+staged line" in staged["content"][0]["text"]


def test_git_reset_waits_for_a_person_then_runs_once(official: Official):
    repo = str(official.repo)
    call = ("git__git_reset", {"repo_path": repo})

    status, pending = execute(official.agent_key, *call)

    assert status == 202 and pending["status"] == "pending_approval", pending
    assert "staged.txt" in git(official.repo, "diff", "--cached", "--name-only")
    approval = Approval.objects.get(id=pending["approval_id"])
    approve(approval, person=official.approver, reason="clean the index")

    status, ran = execute(official.agent_key, *call, approval_id=str(approval.id))
    assert status == 200 and ran["outcome"] == "ran", ran
    assert git(official.repo, "diff", "--cached", "--name-only") == ""
    git(official.repo, "add", "staged.txt")  # as it was, for the other tests
    again_status, again = execute(
        official.agent_key, *call, approval_id=str(approval.id)
    )
    assert again_status == 409 and "already used" in again["reason"]
    assert [r.output["outcome"] for r in call_rows(pending["call_id"])] == ["pending"]
    assert [r.output["outcome"] for r in call_rows(ran["call_id"])] == [
        "started",
        "ran",
    ]


@pytest.mark.parametrize("by_name", [True, False])
def test_over_mcp_a_call_runs_and_git_reset_waits(
    official: Official, quiver_url, by_name
):
    async def work(client):
        async def call(name, arguments):
            if by_name:
                return await client.call_tool(name, arguments)
            return await client.call_tool(
                "call_tool", {"name": name, "arguments": arguments}
            )

        summed = await call("everything-http__get-sum", {"a": 2, "b": 3})
        reset = await call("git__git_reset", {"repo_path": str(official.repo)})
        return summed, reset

    summed, reset = on_mcp(quiver_url, official.agent_key, work)

    assert summed.is_error is False, summed.content
    assert summed.content[0].text == "The sum of 2 and 3 is 5."
    assert reset.is_error is True
    assert reset.structured_content["status"] == "pending_approval"
    call_id = summed.meta["quiver/call_id"]
    rows = call_rows(call_id)
    assert [r.output["outcome"] for r in rows] == ["started", "ran"]
    assert rows[-1].input["channel"] == "mcp"
