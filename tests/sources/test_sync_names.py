"""A sync takes every upstream tool whatever its name: a name outside the rule
becomes ``<source>__<safe name>`` (names used as they are come first), keeps the
plain one as its original name, and is still called upstream by its own name."""

from __future__ import annotations

import pytest

from catalog.models import Tool
from tests.factories import make_tool
from tests.sources.conftest import sync
from tests.upstream import upstream_tool

pytestmark = pytest.mark.django_db

ODD = {
    "get weather": "weather__get_weather_2",  # weather__get_weather is taken below
    "huggingface:facebook/bart-base": "weather__huggingface_facebook/bart-base",
    "get_weather": "weather__get_weather",
    "x" * 130: None,  # past 128 characters: cut, with a hash of the plain name
}


def add_odd_tools(upstream) -> None:
    for name in ODD:
        upstream.tools[name] = upstream_tool(name, f"Tool {name[:20]}.", read_only=True)


def test_a_sync_names_every_upstream_tool_safely_and_keeps_the_plain_name(
    upstream, make_source
):
    add_odd_tools(upstream)
    source = make_source(upstream.url)
    job = sync(source)
    assert job.counts["rejected"] == 0, job.items
    assert job.counts["created"] == len(upstream.tools)
    links = {link.upstream_name: link.tool for link in source.links.all()}
    for upstream_name, expected in ODD.items():
        tool = links[upstream_name]
        plain = f"weather__{upstream_name}"
        if expected is not None:
            assert tool.name == expected
        else:
            assert len(tool.name) == 128 and tool.name.startswith("weather__xxx")
        assert tool.original_name == ("" if tool.name == plain else plain)
    entry = next(
        e for e in job.items if e.get("renamed_from") == "weather__get weather"
    )
    assert entry["name"] == "weather__get_weather_2"
    assert "'weather__get_weather' is taken" in entry["reason"]


def test_a_re_sync_keeps_the_safe_names(upstream, make_source):
    add_odd_tools(upstream)
    source = make_source(upstream.url)
    sync(source)
    names = sorted(Tool.objects.values_list("name", flat=True))
    again = sync(source)
    assert again.counts["created"] == 0 and again.counts["rejected"] == 0
    assert sorted(Tool.objects.values_list("name", flat=True)) == names


def test_a_name_hiding_characters_is_still_refused_naming_them(upstream, make_source):
    upstream.tools["bi\u202eevil"] = upstream_tool("bi\u202eevil", "Hidden.")
    source = make_source(upstream.url)
    job = sync(source)
    [entry] = [e for e in job.items if e["outcome"] == "rejected"]
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in entry["reason"]
    assert not Tool.objects.filter(name__contains="evil").exists()


def test_a_renamed_tool_is_called_upstream_by_its_own_name(
    upstream, make_source, with_key
):
    add_odd_tools(upstream)
    sync(make_source(upstream.url))
    agent = with_key("agent", "agent-call", allow_unsafe=True)
    name = "weather__huggingface_facebook/bart-base"
    response = agent.post(
        "/api/v1/tool-calls/execute",
        {"name": name, "arguments": {}},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["outcome"] == "ran"
    [reached] = upstream.calls
    assert reached.name == "huggingface:facebook/bart-base"


def test_a_listing_whose_names_are_not_text_is_refused_item_by_item(make_source):
    from jobs.services import claim_job
    from sources.services import start_sync
    from sources.sync import OUTCOMES, apply_listing

    source = make_source("http://127.0.0.1:9/mcp")
    job = claim_job(start_sync(source, actor=None).pk)
    assert job is not None
    job.items, job.counts = [], dict.fromkeys(OUTCOMES, 0)
    listed = [{"name": ["a b"]}, {"name": {"x": 1}}, {"name": 5}, {"name": "a b"}]
    apply_listing(source, listed, job, None)
    assert [e["outcome"] for e in job.items] == ["rejected"] * 3 + ["rejected"]
    assert job.items[3]["name"] == "weather__a_b"  # named, then refused: no schema
    assert (
        "inputSchema" in job.items[3]["reason"]
        or "parameters" in (job.items[3]["reason"])
    )


def test_a_synced_tool_never_takes_a_name_another_tool_is_called_by(
    upstream, make_source
):
    """One name, one tool: ``weather__files/read`` would be offered as
    ``weather__files_read``, the name of a tool a curator made; and the safe
    name of ``files read`` skips it."""
    make_tool(name="weather__files_read", description="A curator's tool.")
    upstream.tools = {
        name: upstream_tool(name, "Read a file.", read_only=True)
        for name in ("files/read", "files read")
    }
    job = sync(make_source(upstream.url))
    first, second = job.items
    assert first["outcome"] == "rejected"
    assert "by tool 'weather__files_read'" in first["reason"]
    assert (second["outcome"], second["name"]) == ("created", "weather__files_read_2")
    assert Tool.objects.filter(provider_name="weather__files_read").count() == 1
