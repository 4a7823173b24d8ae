"""The Anthropic and OpenAI tool search adapters, against a live server, checked
with the providers' own SDK types (anthropic, openai; no network)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from anthropic.types import (
    ToolParam,
    ToolReferenceBlockParam,
    ToolResultBlockParam,
    ToolUseBlock,
)
from openai.types.responses import (
    FunctionToolParam,
    ResponseToolSearchCall,
    ToolSearchToolParam,
)
from openai.types.responses.response_tool_search_output_item_param_param import (
    ResponseToolSearchOutputItemParamParam,
)
from pydantic import TypeAdapter
from quiver_client import SEARCH_TOOL_NAME, AsyncQuiver, Quiver

from catalog.naming import provider_safe_name
from tests.aio import run_async
from tests.client.conftest import DOTTED_NAME
from tests.factories import make_client_key

pytestmark = pytest.mark.django_db(transaction=True)


def conforms(typed_dict: Any, value: dict[str, Any]) -> None:
    """``value`` is a ``typed_dict``: its types (pydantic) and no unknown key."""
    TypeAdapter(typed_dict).validate_python(value)
    known = set()
    for klass in typed_dict.__mro__:
        known |= set(getattr(klass, "__annotations__", {}))
    assert set(value) <= known, set(value) - known


def all_conform(typed_dict: Any, values: Iterable[dict[str, Any]]) -> None:
    for value in values:
        conforms(typed_dict, value)


def search_block(query: str, **extra: Any) -> ToolUseBlock:
    return ToolUseBlock(
        type="tool_use",
        id="toolu_1",
        name=SEARCH_TOOL_NAME,
        input={"query": query, **extra},
    )


def test_anthropic_tools_defers_every_offered_tool_and_adds_the_search_tool(
    live_quiver,
):
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        tools = quiver.anthropic_tools()
    all_conform(ToolParam, tools)
    *deferred, search = tools
    assert search["name"] == SEARCH_TOOL_NAME
    assert "defer_loading" not in search
    assert search["input_schema"]["required"] == ["query"]
    assert all(tool["defer_loading"] is True for tool in deferred)
    names = {tool["name"] for tool in deferred}
    assert provider_safe_name(DOTTED_NAME) in names
    assert DOTTED_NAME not in names
    assert "get_weather" in names and "send_email" in names
    # What the key could never be offered: another role's, an unsafe tool.
    assert "refund_payment" not in names
    assert "delete_repository" not in names
    assert len(names) == len(deferred)


def test_anthropic_tool_result_references_the_selected_tools_by_provider_name(
    live_quiver,
):
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        offered = {t["name"] for t in quiver.anthropic_tools()}
        weather = quiver.anthropic_tool_result(search_block("what is the weather"))
        invoice = quiver.anthropic_tool_result(
            {"type": "tool_use", "id": "toolu_2", "name": SEARCH_TOOL_NAME,
             "input": {"query": "export an invoice as PDF", "max_results": 1}}
        )  # fmt: skip
    for result in (weather, invoice):
        conforms(ToolResultBlockParam, result)
        all_conform(ToolReferenceBlockParam, result["content"])
        assert {ref["tool_name"] for ref in result["content"]} <= offered
    assert weather["tool_use_id"] == "toolu_1"
    assert weather["content"][0] == {
        "type": "tool_reference",
        "tool_name": "get_weather",
    }
    assert invoice["content"] == [
        {"type": "tool_reference", "tool_name": provider_safe_name(DOTTED_NAME)}
    ]


def test_anthropic_tool_result_never_names_a_tool_the_list_does_not_offer(
    live_quiver,
):
    # An unsafe-capable key asking for unsafe picks: the list it was given has
    # them, the one a plain key gets does not.
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        result = quiver.anthropic_tool_result(
            search_block("permanently delete a code repository"),
            allow_unsafe=False,
        )
    names = [ref.get("tool_name") for ref in result["content"]]
    assert "delete_repository" not in names
    unsafe_key = make_client_key("unsafe-agent", "agent", allow_unsafe=True)
    with Quiver(live_quiver.url, unsafe_key) as quiver:
        offered = {t["name"] for t in quiver.anthropic_tools()}
        result = quiver.anthropic_tool_result(
            search_block("permanently delete a code repository"), allow_unsafe=True
        )
    names = [ref.get("tool_name") for ref in result["content"]]
    assert "delete_repository" in offered
    assert names[0] == "delete_repository"
    assert set(names) <= offered


def test_a_search_without_a_query_is_an_error_result_the_model_can_fix(live_quiver):
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        empty = quiver.anthropic_tool_result(search_block("  "))
        too_many = quiver.anthropic_tool_result(search_block("mail", max_results=99))
    for result in (empty, too_many):
        conforms(ToolResultBlockParam, result)
        assert result["is_error"] is True
    assert empty["content"][0]["text"].startswith("query:")
    assert too_many["content"][0]["text"].startswith("max_results:")


def test_a_search_that_matches_nothing_answers_in_text(live_quiver):
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        result = quiver.anthropic_tool_result(search_block("zqxj vvkw"))
    conforms(ToolResultBlockParam, result)
    assert result["content"][0]["type"] == "text"
    assert "is_error" not in result


def test_openai_tool_search_is_a_client_executed_tool_search():
    with Quiver("http://unused", "k") as quiver:
        declaration = quiver.openai_tool_search()
    conforms(ToolSearchToolParam, declaration)
    assert declaration["type"] == "tool_search"
    assert declaration["execution"] == "client"
    assert declaration["parameters"]["required"] == ["query"]


def test_openai_tool_search_output_answers_the_call_with_full_definitions(
    live_quiver,
):
    call = ResponseToolSearchCall(
        id="ts_1",
        call_id="call_1",
        type="tool_search_call",
        execution="client",
        status="completed",
        arguments={"query": "send an email to a colleague", "max_results": 2},
    )
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        output = quiver.openai_tool_search_output(call)
        dotted = quiver.openai_tool_search_output(
            {"type": "tool_search_call", "call_id": "call_2",
             "arguments": '{"query": "export an invoice as PDF", "max_results": 1}'}
        )  # fmt: skip
    conforms(ResponseToolSearchOutputItemParamParam, output)
    all_conform(FunctionToolParam, output["tools"])
    assert output["call_id"] == "call_1"
    assert (output["type"], output["execution"], output["status"]) == (
        "tool_search_output",
        "client",
        "completed",
    )
    first = output["tools"][0]
    assert first["name"] == "send_email"
    assert first["type"] == "function"
    assert first["parameters"]["required"] == ["city"]
    assert first["description"] == "Send an email message to a recipient."
    assert len(output["tools"]) <= 2
    assert [tool["name"] for tool in dotted["tools"]] == [
        provider_safe_name(DOTTED_NAME)
    ]


def test_the_async_adapters_answer_like_the_blocking_ones(live_quiver):
    async def run():
        async with AsyncQuiver(live_quiver.url, live_quiver.key) as quiver:
            tools = await quiver.anthropic_tools()
            result = await quiver.anthropic_tool_result(search_block("weather"))
            output = await quiver.openai_tool_search_output(
                {"call_id": "c", "arguments": {"query": "what is the weather"}}
            )
            return tools, result, output

    tools, result, output = run_async(run())
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        assert tools == quiver.anthropic_tools()
    conforms(ToolResultBlockParam, result)
    assert result["content"][0]["tool_name"] == "get_weather"
    assert output["tools"][0]["name"] == "get_weather"


def test_a_tool_added_after_the_list_was_sent_is_not_referenced_until_listed(
    live_quiver,
):
    from catalog.models import Catalog
    from tests.factories import embed_now, make_tool

    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        sent = quiver.anthropic_tools()
        catalog = Catalog.objects.get(slug="default")
        make_tool(catalog, "get_weather_alerts", description="Severe weather alerts.")
        embed_now(catalog)
        block = search_block("severe weather alerts", max_results=3)
        before = quiver.anthropic_tool_result(block)
        with_list = quiver.anthropic_tool_result(block, tools=sent)
        fresh = Quiver(live_quiver.url, live_quiver.key)
        first_use = fresh.anthropic_tool_result(block)  # no list yet: fetches it
        fresh.close()
        quiver.anthropic_tools()
        after = quiver.anthropic_tool_result(block)

    def named(result):
        return [ref.get("tool_name") for ref in result["content"]]

    assert "get_weather_alerts" not in {t["name"] for t in sent}
    assert "get_weather_alerts" not in named(before)
    assert "get_weather_alerts" not in named(with_list)
    assert named(first_use)[0] == "get_weather_alerts"
    assert named(after)[0] == "get_weather_alerts"
