"""A result cap caps what is read (issue 30, point 4): an upstream answering a
tools/call with 60 MB is read no further than the cap (twice the source's
``max_result_bytes`` plus 64 KiB), the call is ``failed`` naming the limit, and
the calling process's memory barely moves: over HTTP (a JSON answer, a
server-sent event, a compressed answer) and over stdio (one 60 MB line)."""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from audit.models import AuditEvent
from calls.services import execute_call
from identity.models import ApiClient
from sources.models import Source, SourceKind
from tests.calls.conftest import link_source
from tests.factories import make_client_key, make_tool
from tests.upstream import Upstream, running_upstream, upstream_tool

FLOOD = 60_000_000
LIMIT = 100_000
FEW_MB = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def flooding() -> Iterator[Upstream]:
    upstream = Upstream(flood_bytes=FLOOD)
    upstream.tools["flood"] = upstream_tool("flood", "Answers a lot.", read_only=True)
    with running_upstream(upstream) as running:
        yield running


@pytest.fixture
def flood(flooding: Upstream, db: None) -> Upstream:
    flooding.flood_as, flooding.flood_encoding = "json", ""
    link_source(flooding, name="big", max_result_bytes=LIMIT)
    return flooding


@pytest.fixture
def agent(db: None) -> Any:
    make_client_key("agent-big", "agent")
    return ApiClient.objects.get(name="agent-big").user


def peak_while(work: Callable[[], Any]) -> tuple[Any, int]:
    """What ``work`` returns, and the most memory Python held meanwhile beyond
    what it held before (tracemalloc: every allocation of this process)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        answer = work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return answer, peak - before


def outcome_row() -> AuditEvent:
    return AuditEvent.objects.filter(event_type="tool_call").order_by("-pk")[0]


@pytest.mark.parametrize("form", ["json", "sse"])
def test_a_60_mb_answer_is_read_only_to_the_cap_and_fails_naming_the_limit(
    flood, agent, form
):
    flood.flood_as = form
    answer, peak = peak_while(
        lambda: execute_call(agent, name="big.flood", arguments={})
    )
    assert answer.outcome == "failed"
    assert f"allows {LIMIT} bytes (max_result_bytes)" in answer.reason
    assert "not read further" in answer.reason
    assert answer.content is None
    assert peak < FEW_MB, f"{peak / 2**20:.1f} MiB held while reading the answer"
    row = outcome_row()
    assert row.output["outcome"] == "failed"
    assert row.output["reason"] == answer.reason


def test_the_connection_still_serves_calls_after_an_answer_over_the_cap(flood, agent):
    assert execute_call(agent, name="big.flood", arguments={}).outcome == "failed"
    after = execute_call(agent, name="big.get_forecast", arguments={"city": "Oslo"})
    assert after.outcome == "ran"


def test_a_compressed_answer_is_refused_since_its_size_cannot_be_capped(flood, agent):
    flood.flood_encoding = "gzip"
    answer = execute_call(agent, name="big.flood", arguments={})
    assert answer.outcome == "failed"
    assert "compressed (gzip)" in answer.reason


def test_an_answer_within_the_cap_is_read_whole(upstream, agent):
    link_source(upstream, name="fits", max_result_bytes=LIMIT)
    answer = execute_call(agent, name="fits.big_result", arguments={"size": 90_000})
    assert answer.outcome == "ran"
    assert len(answer.content[0]["text"]) == 90_000


STDIO_ENTRY = {"command": sys.executable, "args": ["tests/stdio_upstream.py"]}


def test_a_60_mb_line_from_a_stdio_command_is_read_only_to_the_cap(
    agent, tmp_path: Path, settings
):
    sources_file = tmp_path / "sources.json"
    entry = {**STDIO_ENTRY, "cwd": str(Path(__file__).resolve().parents[2])}
    sources_file.write_text(json.dumps({"stdio": {"local": entry}}))
    settings.QUIVER_SOURCES_FILE = str(sources_file)
    source = Source.objects.create(
        catalog=agent_catalog(),
        name="local",
        kind=SourceKind.STDIO,
        stdio_name="local",
        max_result_bytes=LIMIT,
    )
    big = make_tool(
        source.catalog,
        "local.big_result",
        parameters={"type": "object", "properties": {"size": {"type": "integer"}}},
        annotations={"readOnlyHint": True},
    )
    source.links.create(tool=big, upstream_name="big_result")
    answer, peak = peak_while(
        lambda: execute_call(agent, name="local.big_result", arguments={"size": FLOOD})
    )
    assert answer.outcome == "failed", answer.reason
    assert f"allows {LIMIT} bytes (max_result_bytes)" in answer.reason
    assert peak < FEW_MB, f"{peak / 2**20:.1f} MiB held while reading the answer"
    small = execute_call(agent, name="local.big_result", arguments={"size": 10})
    assert small.outcome == "ran"  # a new connection to a new child


def agent_catalog() -> Any:
    from catalog.services import ensure_default_catalog

    return ensure_default_catalog()
