"""A source's sync against the real upstream: every page of tools/list becomes
namespaced catalog tools, the hints map to flags, a re-sync is a diff, tools gone
upstream stop being offered and come back, curators' overrides survive, and an
unreachable upstream changes no tool."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from catalog.choices import ToolStatus
from catalog.models import Tool, ToolChange
from catalog.services.tools import set_tool_status, tool_to_spec, update_tool
from jobs.choices import JobState
from jobs.services import claim_job, finish_job
from sources.models import SourceStatus, SourceTool
from sources.services import start_sync
from sources.sync import apply_listing
from tests.sources.conftest import SECRET, approve_waiting, sync
from tests.upstream import running_upstream, upstream_tool

pytestmark = pytest.mark.django_db


def tools_of(source: Any) -> dict[str, Tool]:
    return {
        link.upstream_name: link.tool for link in source.links.select_related("tool")
    }


def tool_events() -> int:
    return AuditEvent.objects.filter(event_type="tool_changed").count()


def test_a_sync_reads_every_page_and_namespaces_each_tool(upstream, make_source):
    source = make_source(upstream.url)

    job = sync(source)

    assert job.state == JobState.SUCCEEDED
    assert upstream.list_requests >= 3  # 7 tools, 3 a page
    tools = tools_of(source)
    assert sorted(tools) == sorted(upstream.tools)
    assert tools["get_forecast"].name == "weather__get_forecast"
    assert tools["get_forecast"].provider_name == "weather__get_forecast"
    assert job.counts["created"] == 7 and job.total == 7 and job.done == 7
    assert source.status == SourceStatus.OK and source.tool_count == 7
    assert source.last_synced is not None and "7 created" in source.last_outcome


def test_the_input_schema_is_kept_verbatim_and_the_output_schema_in_annotations(
    upstream, make_source
):
    source = make_source(upstream.url)
    sync(source)
    forecast = tools_of(source)["get_forecast"]
    listed = upstream.tools["get_forecast"]
    assert forecast.parameters == listed.input_schema
    assert forecast.annotations["outputSchema"] == listed.output_schema
    assert forecast.description == listed.description
    link = forecast.source_link
    assert link.upstream["outputSchema"] == listed.output_schema
    assert link.upstream_name == "get_forecast" and not link.gone


def test_hints_map_to_flags_failing_closed_for_destructive_tools(upstream, make_source):
    source = make_source(upstream.url)
    sync(source)
    tools = tools_of(source)

    read_only = tools["get_forecast"]
    assert read_only.safe and not read_only.requires_approval
    assert read_only.risk_level == "low" and "read-only" in read_only.capabilities
    assert "open-world" in read_only.tags

    destructive = tools["delete_file"]
    assert destructive.requires_approval and not destructive.safe
    assert destructive.risk_level == "high" and "open-world" not in destructive.tags

    idempotent = tools["set_thermostat"]
    assert idempotent.safe and not idempotent.requires_approval
    assert idempotent.annotations["idempotentHint"] is True
    assert "idempotent" in idempotent.capabilities

    # No annotations at all: the spec's defaults (destructive, open world).
    bare = tools["send_note"]
    assert bare.requires_approval and not bare.safe and "open-world" in bare.tags
    assert bare.annotations.get("idempotentHint") is None


def test_two_sources_with_the_same_tools_do_not_collide(upstream, make_source):
    first, second = make_source(upstream.url), make_source(upstream.url, name="w2")
    sync(first)
    sync(second)
    assert tools_of(second)["get_forecast"].name == "w2__get_forecast"
    assert Tool.objects.filter(name__endswith="__get_forecast").count() == 2


def test_a_long_upstream_name_gets_a_deterministic_provider_name_of_64(
    upstream, make_source
):
    long_name = "fetch_" + "very_long_segment_" * 6
    upstream.tools = {
        long_name: upstream_tool(long_name, "A long one.", read_only=True)
    }
    source = make_source(upstream.url)
    sync(source)
    tool = tools_of(source)[long_name]
    assert tool.name == f"weather__{long_name}"
    assert len(tool.provider_name) == 64
    assert tool.provider_name.startswith("weather__fetch_very_long")


def test_a_catalog_tool_already_holding_the_name_is_refused_with_the_reason(
    upstream, make_source
):
    from tests.factories import make_tool

    make_tool(name="weather__get_forecast")
    source = make_source(upstream.url)

    job = sync(source)

    refused = [i for i in job.items if i["outcome"] == "rejected"]
    assert [i["name"] for i in refused] == ["weather__get_forecast"]
    assert "did not come from source 'weather'" in refused[0]["reason"]
    assert job.counts["created"] == 6
    assert "1 rejected" in source.last_error


def test_a_schema_the_policy_refuses_is_rejected_and_the_rest_synced(
    upstream, make_source
):
    bad = upstream_tool("remote_ref", "Points elsewhere.", read_only=True)
    bad.input_schema["properties"] = {"x": {"$ref": "https://example.com/s.json"}}
    upstream.tools["remote_ref"] = bad
    source = make_source(upstream.url)

    job = sync(source)

    refused = {i["name"]: i["reason"] for i in job.items if i["outcome"] == "rejected"}
    assert list(refused) == ["weather__remote_ref"]
    assert "/parameters/properties/x/$ref" in refused["weather__remote_ref"]
    assert "remote_ref" not in tools_of(source)


def test_a_resync_without_upstream_changes_writes_nothing(upstream, make_source):
    source = make_source(upstream.url)
    sync(source)
    events, changes = tool_events(), ToolChange.objects.count()

    job = sync(source)

    assert job.counts["unchanged"] == 7
    assert tool_events() == events and ToolChange.objects.count() == changes


def test_a_changed_definition_waits_for_review_then_is_one_tool_changed_event(
    upstream, make_source, admin_user
):
    source = make_source(upstream.url)
    sync(source)
    events = tool_events()
    changed = upstream.tools["get_forecast"].model_copy(
        update={"description": "Weather forecast, now with wind."}
    )
    upstream.tools["get_forecast"] = changed

    job = sync(source)

    assert job.counts["held"] == 1 and job.counts["unchanged"] == 6
    assert tool_events() == events  # the pinned definition is still served
    tool = Tool.objects.get(name="weather__get_forecast")
    assert tool.description != "Weather forecast, now with wind."
    approve_waiting(admin_user)
    assert tool_events() == events + 1
    event = AuditEvent.objects.filter(event_type="tool_changed").order_by("-id")[0]
    assert event.input["tool"] == "weather__get_forecast"
    tool.refresh_from_db()
    assert tool.description == "Weather forecast, now with wind." and tool.version == 2
    assert tool.source_link.upstream["description"] == tool.description
    assert sync(source).counts["unchanged"] == 7


def test_a_tool_gone_upstream_stops_being_offered_and_comes_back(upstream, make_source):
    source = make_source(upstream.url)
    sync(source)
    note = upstream.tools.pop("send_note")

    job = sync(source)

    link = SourceTool.objects.get(upstream_name="send_note")
    assert link.gone and link.tool.status == ToolStatus.DEPRECATED
    assert job.counts["gone"] == 1 and source.tool_count == 6
    assert Tool.objects.filter(name="weather__send_note").exists()  # kept for audit

    upstream.tools["send_note"] = note
    job = sync(source)

    link.refresh_from_db()
    assert not link.gone and link.tool.status == ToolStatus.ACTIVE
    assert job.counts["back"] == 1 and source.tool_count == 7


def test_a_tool_a_curator_disabled_stays_disabled_when_it_comes_back(
    upstream, make_source, admin_user
):
    source = make_source(upstream.url)
    sync(source)
    tool = Tool.objects.get(name="weather__send_note")
    set_tool_status(tool, ToolStatus.DISABLED, actor=admin_user)
    note = upstream.tools.pop("send_note")
    sync(source)
    upstream.tools["send_note"] = note
    sync(source)
    tool.refresh_from_db()
    assert tool.status == ToolStatus.DISABLED


def curate(tool: Tool, actor: Any, **changes: Any) -> None:
    spec = tool_to_spec(tool)
    for field, value in changes.items():
        setattr(spec, field, value)
    update_tool(tool, spec, actor=actor)


def test_curator_overrides_survive_an_approved_change_of_the_tool(
    upstream, make_source, curator
):
    source = make_source(upstream.url)
    sync(source)
    tool = Tool.objects.get(name="weather__get_forecast")
    curate(
        tool,
        curator,
        safe=False,
        requires_approval=True,
        allowed_roles=["forecasters"],
        tags=["weather"],  # drops the derived "open-world" tag
        examples=["What is the weather in Oslo?"],
        avoid_when="Past weather.",
        category="weather",
        annotations={**tool.annotations, "team": "ops"},
    )
    upstream.tools["get_forecast"] = upstream.tools["get_forecast"].model_copy(
        update={"description": "Forecast v2."}
    )

    sync(source)
    approve_waiting(curator)

    tool.refresh_from_db()
    assert tool.description == "Forecast v2."  # upstream-owned
    assert (tool.safe, tool.requires_approval) == (False, True)
    assert tool.allowed_roles == ["forecasters"] and tool.tags == ["weather"]
    assert tool.examples == ["What is the weather in Oslo?"]
    assert tool.avoid_when == "Past weather." and tool.category == "weather"
    assert tool.annotations["team"] == "ops"
    assert tool.annotations["readOnlyHint"] is True


def test_untouched_derived_flags_follow_the_upstream_hints(
    upstream, make_source, admin_user
):
    source = make_source(upstream.url)
    sync(source)
    thermostat = upstream.tools["set_thermostat"]
    hints = thermostat.annotations.model_copy(
        update={"destructive_hint": True, "open_world_hint": True}
    )
    upstream.tools["set_thermostat"] = thermostat.model_copy(
        update={"annotations": hints}
    )

    sync(source)
    tool = Tool.objects.get(name="weather__set_thermostat")
    assert tool.status == "held"  # riskier hints: suspended until decided
    approve_waiting(admin_user)

    tool.refresh_from_db()
    assert tool.status == "active"
    assert tool.requires_approval and not tool.safe and "open-world" in tool.tags


def test_an_unreachable_upstream_sets_error_and_keeps_the_tools(make_source):
    with running_upstream() as upstream:
        source = make_source(upstream.url, headers={"Authorization": SECRET})
        upstream.required_headers = {"authorization": SECRET}
        sync(source)
        before = {t.name: (t.version, t.status) for t in Tool.objects.all()}
    events = tool_events()

    job = sync(source)  # the upstream is gone now

    assert job.state == JobState.FAILED
    assert source.status == SourceStatus.ERROR
    assert source.last_error and "sk-upstream" not in source.last_error
    assert job.errors and "sk-upstream" not in " ".join(job.errors)
    after = {t.name: (t.version, t.status) for t in Tool.objects.all()}
    assert after == before and tool_events() == events


def test_a_wrong_header_is_an_error_naming_the_refusal(upstream, make_source):
    upstream.required_headers = {"authorization": SECRET}
    source = make_source(upstream.url, headers={"Authorization": "Bearer wrong-one"})
    job = sync(source)
    assert job.state == JobState.FAILED and source.status == SourceStatus.ERROR
    assert "401" in source.last_error or "nauthorized" in source.last_error
    assert not Tool.objects.filter(name__startswith="weather__").exists()


def test_an_upstream_cannot_loosen_a_destructive_tool_by_calling_it_read_only(
    upstream, make_source
):
    source = make_source(upstream.url)
    sync(source)
    delete = upstream.tools["delete_file"]
    claims = delete.annotations.model_copy(
        update={"read_only_hint": True, "destructive_hint": False}
    )
    upstream.tools["delete_file"] = delete.model_copy(update={"annotations": claims})

    job = sync(source)

    tool = Tool.objects.get(name="weather__delete_file")
    assert tool.requires_approval and not tool.safe and tool.risk_level == "high"
    # The hints stay as they were; the claim itself is kept on the link.
    assert tool.annotations["readOnlyHint"] is False
    assert tool.annotations["destructiveHint"] is True
    assert tool.source_link.upstream["annotations"]["readOnlyHint"] is True
    [item] = [i for i in job.items if i["name"] == "weather__delete_file"]
    assert "would loosen" in item["reason"] and "requires_approval" in item["reason"]
    # A curator may loosen it; from then on the flags follow the hints again.
    curate(tool, None, safe=True, requires_approval=False, risk_level="low")
    tool.refresh_from_db()
    assert tool.safe and not tool.requires_approval


def test_a_new_upstream_name_breaking_the_name_rule_gets_a_safe_one(
    upstream, make_source
):
    upstream.tools = {
        "bad name!": upstream_tool("bad name!", "Spaces.", read_only=True)
    }
    source = make_source(upstream.url)
    job = sync(source)
    [item] = job.items
    assert (item["outcome"], item["name"]) == ("created", "weather__bad_name")
    assert item["renamed_from"] == "weather__bad name!"
    assert source.tool_count == 1
    tool = source.links.get().tool
    assert tool.original_name == "weather__bad name!"


def listing_with_task_only(upstream: Any, name: str) -> list[dict[str, Any]]:
    """The upstream's tools as a 2025-11-25 server lists them, ``name`` runnable
    only as an MCP task (the 2026-07-28 era has no ``execution`` field, so the
    listing is applied as the sync applies what it read)."""
    listed = [
        tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        for tool in upstream.tools.values()
    ]
    for tool in listed:
        if tool["name"] == name:
            tool["execution"] = {"taskSupport": "required"}
    return listed


def apply(source: Any, listed: list[dict[str, Any]]) -> Any:
    """A sync job applying ``listed``, as ``run_sync`` does after listing."""
    job = claim_job(start_sync(source, actor=None).pk)
    assert job is not None
    job.items, job.counts, job.total, job.done = [], {}, len(listed), 0
    apply_listing(source, listed, job, None)
    return finish_job(job, "items", "counts", "done", "total")


def test_a_task_only_tool_is_rejected_naming_what_quiver_lacks(upstream, make_source):
    job = apply(
        make_source(upstream.url), listing_with_task_only(upstream, "send_note")
    )

    [item] = [i for i in job.items if i["name"] == "weather__send_note"]
    assert item["outcome"] == "rejected"
    assert "execution.taskSupport: 'required'" in item["reason"]
    assert "Quiver does not support" in item["reason"]
    assert not Tool.objects.filter(name="weather__send_note").exists()
    assert job.counts["created"] == 6


def test_a_synced_tool_turning_task_only_is_out_of_service_until_callable_again(
    upstream, make_source
):
    source = make_source(upstream.url)
    sync(source)

    job = apply(source, listing_with_task_only(upstream, "send_note"))

    link = SourceTool.objects.get(upstream_name="send_note")
    assert link.gone and link.tool.status == ToolStatus.DEPRECATED
    [item] = [i for i in job.items if i["name"] == "weather__send_note"]
    assert item["outcome"] == "gone" and "taskSupport" in item["reason"]
    job = sync(source)
    link.refresh_from_db()
    assert not link.gone and link.tool.status == ToolStatus.ACTIVE
    assert job.counts["back"] == 1
