"""What server-everything does that Quiver's own test upstream never did, each
handled or refused clearly, never a 500 and never a hang: embedded resources,
resource links, annotated content, structured content, a long operation (whose
progress Quiver does not ask for), log notifications in the middle of a call,
tools/list_changed after the handshake, MCP task-only tools, sampling,
elicitation and roots (Quiver declares none, so the server offers none of those
tools, and a server asking anyway is refused), odd schemas, and an environment
dump holding the entry's secret."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from audit.models import AuditEvent
from catalog.models import Tool
from sources.models import Source
from sources.services import add_stdio_source
from tests.aio import run_async
from tests.servers.conftest import STDIO_SECRET, Official, first_sync
from tests.servers.helpers import call_rows, execute, straight

pytestmark = pytest.mark.django_db
BOTH = ["everything-http", "everything"]


def ran(official: Official, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    status, answer = execute(official.agent_key, name, arguments)
    assert status == 200 and answer["outcome"] == "ran", answer
    return answer


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get-resource-links", {"count": 3}),
        ("get-annotated-message", {"messageType": "error", "includeImage": True}),
        ("get-structured-content", {"location": "Chicago"}),
    ],
)
def test_resource_links_annotations_and_structured_content_pass_as_given(
    official: Official, everything_url, tool, arguments
):
    answer = ran(official, f"everything-http__{tool}", arguments)
    given = straight(everything_url, tool, arguments)
    assert answer["content"] == given["content"]
    assert answer["structured_content"] == given.get("structuredContent")


@pytest.mark.parametrize("source", BOTH)
@pytest.mark.parametrize("kind", ["Text", "Blob"])
def test_an_embedded_resource_comes_back_whole(official: Official, source, kind):
    arguments = {"resourceType": kind, "resourceId": 2}
    answer = ran(official, f"{source}__get-resource-reference", arguments)
    [intro, embedded, outro] = answer["content"]
    assert embedded["type"] == "resource"
    resource = embedded["resource"]
    assert resource["uri"] == f"demo://resource/dynamic/{kind.lower()}/2"
    assert ("blob" if kind == "Blob" else "text") in resource


def test_a_gzipped_resource_made_from_a_data_uri_is_inline(official: Official):
    arguments = {
        "name": "note.txt.gz",
        "data": "data:text/plain;base64,aGVsbG8=",
        "outputType": "resource",
    }
    answer = ran(official, "everything__gzip-file-as-resource", arguments)
    [block] = answer["content"]
    assert block["resource"]["mimeType"] == "application/gzip"
    assert block["resource"]["blob"].startswith("H4sI")  # gzip's magic, base64


@pytest.mark.parametrize("source", BOTH)
def test_a_long_operation_runs_while_the_server_sends_log_notifications(
    official: Official, source
):
    """Quiver asks for no progress (no progressToken) and ignores log messages:
    the call runs to its end within the source's timeout."""
    ran(official, f"{source}__toggle-simulated-logging", {})  # every 5 s from now
    try:
        arguments = {"duration": 6, "steps": 3}
        answer = ran(official, f"{source}__trigger-long-running-operation", arguments)
        assert "Duration: 6 seconds, Steps: 3" in answer["content"][0]["text"]
        assert ran(official, f"{source}__echo", {"message": "still here"})
    finally:
        ran(official, f"{source}__toggle-simulated-logging", {})  # off again


@pytest.mark.parametrize("source", BOTH)
def test_an_operation_longer_than_the_timeout_is_timed_out_and_the_next_runs(
    official: Official, source
):
    Source.objects.filter(name=source).update(timeout_seconds=2)
    arguments = {"duration": 8, "steps": 2}

    status, answer = execute(
        official.agent_key, f"{source}__trigger-long-running-operation", arguments
    )

    assert status == 200 and answer["outcome"] == "timed_out", answer
    assert answer["reason"] == f"source {source!r}: no answer within 2 s"
    assert call_rows(answer["call_id"])[-1].output["outcome"] == "timed_out"
    echoed = ran(official, f"{source}__echo", {"message": "next"})
    assert echoed["content"][0]["text"] == "Echo: next"


@pytest.mark.parametrize("source", BOTH)
def test_a_task_only_tool_is_refused_at_sync_naming_what_quiver_lacks(
    official: Official, source
):
    [item] = [
        item
        for item in official.jobs[source].items
        if item["name"] == f"{source}__simulate-research-query"
    ]
    assert item["outcome"] == "rejected"
    assert "execution.taskSupport: 'required'" in item["reason"]
    assert "Quiver does not support" in item["reason"]
    assert not Tool.objects.filter(name=item["name"]).exists()
    status, answer = execute(official.agent_key, item["name"], {"topic": "x"})
    assert status == 404 and answer["outcome"] == "refused"


def test_the_tool_registered_after_the_handshake_is_seen_by_the_sync(
    official: Official,
):
    """server-everything registers simulate-research-query once the client is
    initialized and announces it with notifications/tools/list_changed."""
    names = [item["name"] for item in official.jobs["everything-http"].items]
    assert "everything-http__simulate-research-query" in names


CAPABILITY_TOOLS = {
    "trigger-sampling-request",
    "trigger-sampling-request-async",
    "trigger-elicitation-request",
    "trigger-elicitation-request-async",
    "trigger-url-elicitation",
    "get-roots-list",
}


def test_sampling_elicitation_and_roots_tools_are_never_offered(
    official: Official, everything_url
):
    """Quiver has no model or person to answer a server's request, so it
    declares no sampling, elicitation or roots capability; the server then
    registers none of the tools that need one. A client declaring sampling does
    get one, so their absence is Quiver's declaration, not the server's."""
    for source in BOTH:
        listed = {
            item["name"].split("__", 1)[1] for item in official.jobs[source].items
        }
        assert not listed & CAPABILITY_TOOLS

    async def answer_sampling(context: Any, params: Any) -> Any:
        raise AssertionError("never called: the test only lists")

    async def listed_with_sampling() -> set[str]:
        transport = streamable_http_client(everything_url)
        async with Client(transport, sampling_callback=answer_sampling) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert "trigger-sampling-request" in run_async(listed_with_sampling())


def test_odd_schemas_validate_as_written(official: Official):
    """git_log's anyOf string-or-null with a null default; get-sum's draft-07."""
    repo = str(official.repo)
    answer = ran(
        official,
        "git__git_log",
        {"repo_path": repo, "max_count": 1, "start_timestamp": None},
    )
    assert "Repot the fern too" in answer["content"][0]["text"]
    status, refused = execute(
        official.agent_key, "git__git_log", {"repo_path": repo, "max_count": "1"}
    )
    assert status == 400 and refused["reason"].startswith("arguments/max_count:")


def test_an_environment_dump_never_shows_the_entry_s_secret(official: Official):
    answer = ran(official, "everything__get-env", {})
    text = answer["content"][0]["text"]
    dumped = json.loads(text)
    assert "EVERYTHING_API_TOKEN" in dumped
    assert STDIO_SECRET not in text
    recorded = json.dumps(
        [[e.input, e.output] for e in AuditEvent.objects.all()], default=str
    )
    assert STDIO_SECRET not in recorded


ASKED = {
    "asks_sampling": "Sampling not supported",
    "asks_elicitation": "Elicitation not supported",
    "asks_roots": "List roots not supported",
}


def test_a_server_asking_anyway_is_refused_and_its_call_fails_saying_so(
    official: Official,
):
    """asking_server.mjs (the TypeScript SDK, handshake era over stdio) sends
    sampling, elicitation and roots requests mid-call although Quiver declared
    none: each is refused at once (nothing waits for a model or a person) and
    the server's error result is the call's, naming what is not supported."""
    added = add_stdio_source(official.catalog, name="asker", stdio_name="asker")
    synced = first_sync(added)
    assert synced.counts["created"] == len(ASKED), synced.items

    for tool, refusal in ASKED.items():
        status, answer = execute(official.agent_key, f"asker__{tool}", {})

        assert status == 200 and answer["outcome"] == "failed", answer
        assert answer["is_error"] is True
        assert answer["content"] == [
            {"type": "text", "text": f"MCP error -32600: {refusal}"}
        ]
        assert call_rows(answer["call_id"])[-1].output["outcome"] == "failed"
