"""A re-sync never loosens a tool: not its safe, approval and risk flags, not its
capabilities (``read-only`` is what requests may require, ``idempotent`` is what
the call path retries), not its MCP hint annotations; a definition built from a
tool never says read-only and destructive at once. A held-destructive tool whose
upstream now claims read-only and idempotent is not offered to a request that
requires ``read-only``, is not retried, and its MCP definitions agree."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.formats import export_tool
from catalog.models import Tool
from catalog.services.tools import tool_to_spec
from gateway.services import mcp_tool
from sources.mapping import RISK_ORDER, effective, synced_spec
from sources.models import Source
from tests.calls.test_retries import Relay, approved_call, reached
from tests.sources.conftest import approve_waiting, sync
from tests.upstream import Upstream

CALLS = "/api/v1/tool-calls/execute"
LOOSE = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


def claim(upstream: Upstream, name: str, **hints: bool) -> None:
    """The upstream now says ``hints`` (MCP names) of its tool ``name``."""
    annotations = types.ToolAnnotations.model_validate(hints)
    assert annotations.model_dump(by_alias=True, exclude_none=True) == hints
    upstream.tools[name] = upstream.tools[name].model_copy(
        update={"annotations": annotations}
    )


@pytest.fixture
def held(upstream: Upstream, make_source: Any) -> Tool:
    """``send_note`` (no hints: destructive, open world), synced, then claimed
    read-only, not destructive, idempotent and closed-world, and synced again."""
    source = make_source(upstream.url)
    sync(source)
    claim(upstream, "send_note", **LOOSE)
    job = sync(source)
    [item] = [i for i in job.items if i["name"] == "weather__send_note"]
    assert "would loosen" in item["reason"]
    return Tool.objects.get(name="weather__send_note")


@pytest.mark.django_db
def test_a_held_tool_keeps_every_flag_capability_and_hint(held):
    assert (held.safe, held.requires_approval, held.risk_level) == (
        False,
        True,
        "high",
    )
    assert "read-only" not in held.capabilities
    assert "idempotent" not in held.capabilities
    assert "open-world" in held.tags
    assert {key: held.annotations[key] for key in LOOSE} == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert held.source_link.upstream["annotations"]["readOnlyHint"] is True


@pytest.mark.django_db
def test_the_job_item_names_what_was_held(upstream, make_source):
    source = make_source(upstream.url)
    sync(source)
    claim(upstream, "send_note", **LOOSE)
    job = sync(source)
    [item] = [i for i in job.items if i["name"] == "weather__send_note"]
    for name in (*LOOSE, "safe", "requires_approval", "capability read-only"):
        assert name in item["reason"], (name, item["reason"])


@pytest.mark.django_db
def test_a_held_tool_is_not_offered_to_a_read_only_request(held, with_key):
    agent = with_key("agent", name="ops-bot", allow_unsafe=True)
    body = {
        "query": "send a note to a colleague",
        "scorer": "keyword",
        "min_score": 0,
        "allow_unsafe": True,
        "explain": True,
    }
    anything = agent.post("/api/v1/select", body, format="json").json()
    assert "weather__send_note" in [t["name"] for t in anything["tools"]]

    read_only = {**body, "require_capabilities": ["read-only"]}
    answer = agent.post("/api/v1/select", read_only, format="json").json()

    assert "weather__send_note" not in [t["name"] for t in answer["tools"]]
    reasons = {e["name"]: e["reason"] for e in answer["excluded"]}
    assert reasons["weather__send_note"] == "capability"


def consistent(definition: dict[str, Any]) -> bool:
    hints = definition.get("annotations") or {}
    return not (hints.get("readOnlyHint") is True and hints.get("destructiveHint"))


@pytest.mark.django_db
def test_every_mcp_definition_of_a_held_tool_is_destructive_only(
    held, admin_api, with_key
):
    built = export_tool(tool_to_spec(held), "mcp")
    exported = admin_api.get("/api/v1/catalogs/default/export?format=mcp").json()
    [listed] = [t for t in exported["tools"] if t["name"] == "weather__send_note"]
    agent = with_key("agent", name="ops-bot", allow_unsafe=True)
    body = {
        "query": "send a note to a colleague",
        "scorer": "keyword",
        "allow_unsafe": True,
        "format": "mcp",
        "allow_tools": ["weather__send_note"],
        "min_score": 0,
    }
    [picked] = agent.post("/api/v1/select", body, format="json").json()["tools"]
    for definition in (built, mcp_tool(built), listed, picked["definition"]):
        assert definition["annotations"]["destructiveHint"] is True, definition
        assert consistent(definition), definition
    assert mcp_tool(built)["annotations"]["idempotentHint"] is False


@pytest.fixture
def relay(upstream: Upstream) -> Iterator[Relay]:
    """tests/calls' relay: cuts a tools/call's connection after it went through."""
    relay = Relay(int(upstream.url.rsplit(":", 1)[1].split("/")[0]))
    yield relay
    relay.close()


@pytest.mark.django_db
def test_a_held_tool_is_not_retried_as_idempotent(
    upstream, make_source, relay, with_key, admin_user
):
    source = make_source(upstream.url)
    sync(source)
    claim(upstream, "delete_file", readOnlyHint=True, idempotentHint=True)
    sync(source)
    # Dropping openWorldHint: false says the tool now reaches the open world:
    # a risky change, suspended until approved (tests/sources/test_pinning.py).
    approve_waiting(admin_user)
    Source.objects.filter(pk=source.pk).update(url=f"http://127.0.0.1:{relay.port}/mcp")
    agent = with_key("agent", name="agent-retry", allow_unsafe=True)
    thermostat = {"name": "weather__set_thermostat", "arguments": {"celsius": 20}}
    warm = agent.post(CALLS, thermostat, format="json").json()
    assert warm["outcome"] == "ran", warm
    # The control: a tool synced idempotent from the start is tried twice.
    upstream.calls.clear()
    relay.breaks = 1
    retried = agent.post(CALLS, thermostat, format="json").json()
    assert retried["outcome"] == "ran" and reached(upstream, "set_thermostat", 2) == 2

    relay.breaks = 1
    answer = approved_call(agent, "weather__delete_file", {"path": "/a"}).json()

    assert answer["outcome"] == "failed", answer
    assert reached(upstream, "delete_file", 1) == 1


# Properties of the mapping alone: any tool, any previous and new upstream hints.

HINT_VALUES = st.sampled_from([None, True, False])
HINTS = st.fixed_dictionaries({key: HINT_VALUES for key in LOOSE}).map(
    lambda hints: {k: v for k, v in hints.items() if v is not None}
)
CAPABILITIES = st.lists(st.sampled_from(["read-only", "idempotent", "batch"]))


def upstream_json(hints: dict[str, bool]) -> dict[str, Any]:
    return {
        "name": "t",
        "description": "d",
        "inputSchema": {"type": "object"},
        "annotations": hints,
    }


@st.composite
def tools(draw: Any) -> Tool:
    """A stored tool in any state a sync and a curator may have left it."""
    return Tool(
        name="s__t",
        safe=draw(st.booleans()),
        requires_approval=draw(st.booleans()),
        risk_level=draw(st.sampled_from(RISK_ORDER)),
        capabilities=sorted(set(draw(CAPABILITIES))),
        tags=draw(st.sampled_from([[], ["open-world"]])),
        annotations=draw(HINTS),
        cost_per_call=Decimal("0"),
    )


@settings(max_examples=400, deadline=None)
@given(tool=tools(), previous=HINTS, new=HINTS)
def test_a_resync_never_loosens_any_tool(tool, previous, new):
    before = tool_to_spec(tool)
    held: list[str] = []

    after = synced_spec("s__t", upstream_json(new), tool, upstream_json(previous), held)

    assert not (after.safe and not before.safe)
    assert not (before.requires_approval and not after.requires_approval)
    assert RISK_ORDER.index(after.risk_level) >= RISK_ORDER.index(before.risk_level)
    assert set(after.capabilities) <= set(before.capabilities)
    now, then = effective(after.annotations), effective(before.annotations)
    for key, loose in LOOSE.items():
        assert now[key] != loose or then[key] == loose, (key, held)
    assert not (
        after.annotations.get("readOnlyHint") is True
        and after.annotations.get("destructiveHint") is True
    )
    definition = export_tool(after, "mcp")
    assert consistent(definition) and consistent(mcp_tool(definition))


@settings(max_examples=200, deadline=None)
@given(new=HINTS)
def test_a_new_tool_follows_its_hints_and_never_contradicts_itself(new):
    spec = synced_spec("s__t", upstream_json(new), None, None)
    meant = effective(new)
    assert spec.safe is not meant["destructiveHint"]
    assert ("read-only" in spec.capabilities) is meant["readOnlyHint"]
    assert not (
        spec.annotations.get("readOnlyHint") is True
        and spec.annotations.get("destructiveHint") is True
    )
    definition = export_tool(spec, "mcp")
    assert consistent(definition) and consistent(mcp_tool(definition))
