"""quiver_client.Quiver and AsyncQuiver against a live server: the answers are
the API's, typed; errors carry the API's error, detail and fields."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from quiver_client import (
    AsyncQuiver,
    AuthenticationError,
    BadRequest,
    PermissionDenied,
    Quiver,
    RateLimited,
    RetryPolicy,
)

from audit.models import AuditEvent
from identity.models import ApiClient
from selection.api.serializers import PickSerializer, SelectOutputSerializer
from tests.aio import run_async
from tests.factories import make_client_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_select_answers_the_apis_fields_with_typed_picks(live_quiver):
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        answer = quiver.select("what is the weather in Paris", max_candidates=2)
    assert set(SelectOutputSerializer().fields) - {"excluded"} <= set(answer)
    uuid.UUID(answer["selection_id"])
    assert answer["tools"][0]["name"] == "get_weather"
    assert set(answer["tools"][0]) == set(PickSerializer().fields)
    assert len(answer["tools"]) <= 2


def test_select_takes_chat_messages_and_passes_every_option(live_quiver):
    messages = [{"role": "user", "content": "send an email to Dana"}]
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        answer = quiver.select(messages=messages, format="anthropic", explain=True)
    pick = answer["tools"][0]
    assert pick["name"] == "send_email"
    assert set(pick["definition"]) == {"name", "description", "input_schema"}
    assert "excluded" in answer


def test_select_refuses_both_query_and_messages_before_any_request(live_quiver):
    with (
        Quiver(live_quiver.url, live_quiver.key) as quiver,
        pytest.raises(TypeError, match="exactly one"),
    ):
        quiver.select("a", messages=[{"role": "user", "content": "b"}])
        with pytest.raises(TypeError, match="exactly one"):
            quiver.select()


def test_a_bad_option_is_a_bad_request_naming_the_field(live_quiver):
    with (
        Quiver(live_quiver.url, live_quiver.key) as quiver,
        pytest.raises(BadRequest) as caught,
    ):
        quiver.select("weather", max_candidates=0)
    error = caught.value
    assert error.status_code == 400
    assert error.error == "invalid"
    assert error.detail.startswith("max_candidates:")
    assert "max_candidates" in error.fields


def test_a_role_the_key_lacks_is_permission_denied_naming_roles(live_quiver):
    with (
        Quiver(live_quiver.url, live_quiver.key) as quiver,
        pytest.raises(PermissionDenied) as caught,
    ):
        quiver.select("refund", roles=["finance"])
    assert caught.value.status_code == 403
    assert "roles" in caught.value.detail


def test_a_bad_key_is_an_authentication_error_and_is_not_retried(live_quiver):
    sleeps: list[float] = []
    with (
        Quiver(live_quiver.url, "qk_not-a-key", sleep=sleeps.append) as quiver,
        pytest.raises(AuthenticationError) as caught,
    ):
        quiver.select("weather")
    assert caught.value.status_code == 401
    assert caught.value.error
    assert caught.value.detail
    assert sleeps == []


def test_select_batch_answers_in_order_with_errors_in_place(live_quiver):
    requests = [
        {"query": "weather in Rome"},
        {"query": "weather", "max_candidates": 0},
        {"messages": [{"role": "user", "content": "email the report"}]},
    ]
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        results = quiver.select_batch(requests)
    assert len(results) == 3
    assert results[0]["tools"][0]["name"] == "get_weather"
    assert results[1]["error"] == "invalid"
    assert "max_candidates" in results[1]["detail"]
    assert results[2]["tools"][0]["name"] == "send_email"
    assert results[0]["selection_id"] != results[2]["selection_id"]


def test_validate_tool_calls_links_the_selection_and_names_what_is_wrong(live_quiver):
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        selection = quiver.select("weather in Oslo", max_candidates=1)
        output = {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "send_email", "input": {}},
            ],
        }
        answer = quiver.validate_tool_calls(
            output, selection_id=selection["selection_id"], format="anthropic"
        )
    assert answer["selection_id"] == selection["selection_id"]
    assert answer["format"] == "anthropic"
    assert answer["valid"] is False
    first, second = answer["calls"]
    assert first["tool"] == "get_weather"
    assert "city" in first["hint"]
    assert "not_offered" in second["flags"]
    assert AuditEvent.objects.filter(request_id=answer["validation_id"]).exists()


def test_validate_tool_calls_takes_a_provider_sdk_object(live_quiver):
    from anthropic.types import Message

    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                }
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        answer = quiver.validate_tool_calls(message)
    assert answer["valid"] is True
    assert answer["calls"][0]["arguments"] == {"city": "Oslo"}


def test_an_unknown_selection_is_not_found_naming_selection_id(live_quiver):
    from quiver_client import NotFound

    with (
        Quiver(live_quiver.url, live_quiver.key) as quiver,
        pytest.raises(NotFound) as caught,
    ):
        quiver.validate_tool_calls(
            {"type": "function_call", "name": "get_weather", "arguments": "{}",
             "call_id": "c"},
            selection_id=str(uuid.uuid4()),
        )  # fmt: skip
    assert "selection_id" in caught.value.detail


def test_a_real_429_carries_the_servers_retry_after(live_quiver):
    key = make_client_key("one-a-minute", "agent")
    ApiClient.objects.filter(name="one-a-minute").update(rate_limit_per_minute=1)
    sleeps: list[float] = []
    policy = RetryPolicy(max_retries=2, max_wait=0.5)
    with Quiver(live_quiver.url, key, retry=policy, sleep=sleeps.append) as quiver:
        quiver.select("weather")
        with pytest.raises(RateLimited) as caught:
            quiver.select("weather")
    assert caught.value.status_code == 429
    assert caught.value.error == "throttled"
    assert caught.value.retry_after is not None and caught.value.retry_after > 0.5
    # Longer than the policy's max_wait: raised at once, not slept through.
    assert sleeps == []


def test_list_tools_reads_every_page_of_what_the_key_may_read(live_quiver):
    from catalog.models import Catalog
    from tests.factories import make_tool

    catalog = Catalog.objects.get(slug="default")
    for n in range(55):
        make_tool(catalog, f"extra_tool_{n}")
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        tools = quiver.list_tools(catalog="default")
    names = {tool["name"] for tool in tools}
    assert len(tools) == len(names) > 50
    assert "get_weather" in names
    assert "refund_payment" not in names  # the finance role's, hidden
    assert "delete_repository" not in names  # unsafe, the key may not


def test_async_quiver_selects_and_validates_like_the_blocking_one(live_quiver):
    async def run():
        async with AsyncQuiver(live_quiver.url, live_quiver.key) as quiver:
            answers = await asyncio.gather(
                quiver.select("what is the weather in Paris"),
                quiver.select(messages=[{"role": "user", "content": "send email"}]),
            )
            batch = await quiver.select_batch([{"query": "weather"}])
            check = await quiver.validate_tool_calls(
                [{"type": "tool_use", "id": "t", "name": "get_weather",
                  "input": {"city": "Lima"}}],
                selection_id=answers[0]["selection_id"],
            )  # fmt: skip
            return answers, batch, check

    answers, batch, check = run_async(run())
    assert [a["tools"][0]["name"] for a in answers] == ["get_weather", "send_email"]
    assert batch[0]["tools"][0]["name"] == "get_weather"
    assert check["valid"] is True
