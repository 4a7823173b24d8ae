"""POST /api/v1/tool-calls/execute against a real upstream MCP server: the order
access -> validation -> approval -> claim -> upstream -> outcome, every outcome,
the tool_call audit rows of each attempt (one for a refusal, ``started`` then the
outcome for a call that reached for its upstream), and nothing invalid ever
reaching the upstream."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from calls.hashing import arguments_hash
from calls.models import Approval
from calls.services import execute_call
from catalog.models import ToolReview
from catalog.pinning import tool_definition_hash
from catalog.services import ensure_default_catalog
from catalog.services.pinning import allow_flagged
from identity.models import ApiClient
from sources.models import Source, SourceTool
from tests.calls.conftest import link_source
from tests.factories import make_client_key, make_tool, make_user
from tests.upstream import free_port, running_upstream

URL = "/api/v1/tool-calls/execute"
FORECAST = "weather.get_forecast"


def execute(api: Any, name: str, arguments: dict[str, Any], **more: Any) -> Any:
    return api.post(URL, {"name": name, "arguments": arguments, **more}, format="json")


def calls_recorded() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="tool_call").order_by("pk"))


def outcomes_recorded() -> list[AuditEvent]:
    """The events that say how each attempt ended (not the ``started`` ones)."""
    return [e for e in calls_recorded() if e.output["outcome"] != "started"]


def approve(approval_id: str, **fields: Any) -> None:
    fields.setdefault("status", "approved")
    Approval.objects.filter(pk=approval_id).update(decided=timezone.now(), **fields)


@pytest.fixture
def agent(with_key: Any) -> Any:
    return with_key("agent", "agent-call", allow_unsafe=True)


def test_a_read_only_tool_runs_upstream_and_its_result_comes_back_as_it_was(
    agent, linked, upstream
):
    response = execute(agent, FORECAST, {"city": "Paris", "days": 2})
    assert response.status_code == 200, response.json()
    answer = response.json()
    assert answer["outcome"] == "ran"
    assert answer["is_error"] is False
    assert answer["structured_content"] == {
        "city": "Paris",
        "forecast": ["day 1: sunny, 21 C", "day 2: sunny, 21 C"],
    }
    assert answer["content"] == [
        {"type": "text", "text": "day 1: sunny, 21 C\nday 2: sunny, 21 C"}
    ]
    [reached] = upstream.calls
    assert (reached.name, reached.arguments) == (
        "get_forecast",
        {"city": "Paris", "days": 2},
    )
    [start, event] = calls_recorded()
    assert str(start.pk) == answer["call_id"]
    assert start.summary == f"{FORECAST} started"
    assert start.output == {"outcome": "started", "timeout_s": 30.0}
    assert event.summary == f"{FORECAST} ran"
    assert event.selection_id is None
    assert event.actor_name.endswith("agent-call") or "agent-call" in event.actor_name
    assert event.input == {
        "tool": FORECAST,
        "tool_version": linked["get_forecast"].version,
        "definition_hash": tool_definition_hash(linked["get_forecast"]),
        "source": "weather",
        "upstream_name": "get_forecast",
        "arguments": {"city": "Paris", "days": 2},
        "arguments_hash": arguments_hash({"days": 2, "city": "Paris"}),
        "selection_id": None,
        "approval_id": None,
        "channel": "api",
        "person": None,  # a key bound to nobody
        "upstream_account": {"kind": "shared"},  # the source's own headers
        "call_id": start.pk,
    }
    assert start.input == {k: v for k, v in event.input.items() if k != "call_id"}
    output = event.output
    assert output["outcome"] == "ran" and output["reason"] == ""
    assert output["is_error"] is False
    assert len(output["result_hash"]) == 64
    assert output["result_bytes"] > 0
    assert output["duration_ms"] > 0


def test_an_invalid_call_never_reaches_the_upstream_and_gets_validates_hint(
    agent, linked, upstream
):
    response = execute(agent, FORECAST, {"city": "", "days": 9})
    assert response.status_code == 400
    answer = response.json()
    assert answer["outcome"] == "refused"
    assert answer["error"] == "invalid"
    assert answer["detail"].startswith("arguments/")
    assert "arguments" in answer["fields"]
    assert {error["pointer"] for error in answer["errors"]} == {"/city", "/days"}
    output = {
        "type": "tool_use",
        "id": "t1",
        "name": FORECAST,
        "input": {"city": "", "days": 9},
    }
    checked = agent.post(
        "/api/v1/tool-calls/validate",
        {"output": {"content": [output]}, "format": "anthropic"},
        format="json",
    ).json()
    assert answer["hint"] == checked["calls"][0]["hint"] != ""
    assert upstream.calls == []
    [event] = calls_recorded()
    assert event.output["outcome"] == "refused"
    assert event.output["reason"] == answer["detail"]


def test_a_hidden_tool_and_a_made_up_name_are_the_same_refusal(
    with_key, linked, upstream
):
    secret = make_tool(
        ensure_default_catalog(),
        "weather.secret_forecast",
        parameters=linked["get_forecast"].parameters,
        allowed_roles=["finance"],
    )
    source = Source.objects.create(
        catalog=secret.catalog, name="hidden", url=upstream.url
    )
    SourceTool.objects.create(source=source, tool=secret, upstream_name="get_forecast")
    agent = with_key("agent", "agent-no-finance")
    hidden = execute(agent, "weather.secret_forecast", {"city": "Paris"})
    made_up = execute(agent, "weather.no_such_tool", {"city": "Paris"})
    assert hidden.status_code == made_up.status_code == 404
    assert (
        hidden.json()["detail"].replace("secret_forecast", "no_such_tool")
        == (made_up.json()["detail"])
    )
    assert upstream.calls == []
    assert [e.output["outcome"] for e in calls_recorded()] == ["refused", "refused"]


def test_a_tool_the_caller_sees_but_may_not_call_is_refused_naming_why(
    with_key, linked, upstream
):
    make_tool(
        ensure_default_catalog(),
        "weather.finance_forecast",
        parameters=linked["get_forecast"].parameters,
        allowed_roles=["finance"],
    )
    curator = with_key("curator", "curator-no-finance")
    response = execute(curator, "weather.finance_forecast", {"city": "Paris"})
    assert response.status_code == 403
    assert response.json()["detail"].startswith("name:")
    assert "roles" in response.json()["detail"]
    assert upstream.calls == []


def test_a_tool_without_a_source_is_refused_as_nothing_can_run_it(agent, upstream):
    make_tool(ensure_default_catalog(), "plain_tool", parameters={"type": "object"})
    response = execute(agent, "plain_tool", {})
    assert response.status_code == 409
    assert response.json()["detail"] == "name: no source to run it"
    [event] = calls_recorded()
    assert event.output["outcome"] == "refused"
    assert event.input["source"] is None


def test_a_tool_gone_from_its_source_is_never_called(agent, linked, upstream):
    SourceTool.objects.filter(tool=linked["get_forecast"]).update(gone=True)
    response = execute(agent, FORECAST, {"city": "Paris"})
    assert response.status_code == 409
    assert "gone" in response.json()["detail"]
    assert upstream.calls == []


def test_a_call_that_needs_approval_is_pending_and_not_run(agent, linked, upstream):
    response = execute(agent, "weather.delete_file", {"path": "/tmp/a"})
    assert response.status_code == 202
    answer = response.json()
    assert answer["outcome"] == "pending"
    assert answer["status"] == "pending_approval"
    assert answer["is_error"] is True
    assert answer["structured_content"]["status"] == "pending_approval"
    assert answer["structured_content"]["approval_id"] == answer["approval_id"]
    approval = Approval.objects.get(pk=answer["approval_id"])
    assert approval.status == "pending"
    assert approval.tool == linked["delete_file"]
    assert approval.arguments_hash == arguments_hash({"path": "/tmp/a"})
    assert approval.expires > timezone.now()
    assert upstream.calls == []
    [call] = calls_recorded()
    assert call.output["outcome"] == "pending"
    assert answer["call_id"] == str(call.pk)
    assert call.input["approval_id"] == answer["approval_id"]
    [asked] = AuditEvent.objects.filter(event_type="approval")
    assert asked.output["status"] == "requested"


def test_an_approved_call_runs_once_and_its_approval_is_then_used(
    agent, linked, upstream
):
    arguments = {"path": "/tmp/a"}
    approval_id = execute(agent, "weather.delete_file", arguments).json()["approval_id"]
    approve(approval_id)
    first = execute(agent, "weather.delete_file", arguments, approval_id=approval_id)
    assert first.status_code == 200, first.json()
    assert first.json()["outcome"] == "ran"
    assert Approval.objects.get(pk=approval_id).status == "used"
    again = execute(agent, "weather.delete_file", arguments, approval_id=approval_id)
    assert again.status_code == 409
    assert "already used" in again.json()["detail"]
    assert len(upstream.calls_to("delete_file")) == 1
    outcomes = [(e.output["outcome"], e.input["approval_id"]) for e in calls_recorded()]
    assert outcomes == [
        ("pending", approval_id),
        ("started", approval_id),
        ("ran", approval_id),
        ("refused", approval_id),
    ]
    steps = AuditEvent.objects.filter(event_type="approval").order_by("pk")
    assert [e.output["status"] for e in steps] == ["requested", "used"]
    assert steps[1].output["call_id"] == int(first.json()["call_id"])


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        ({"arguments": {"path": "/etc/passwd"}}, "other arguments"),
        (
            {"name": "weather.send_note", "arguments": {"to": "a", "text": "b"}},
            "not this tool",
        ),
    ],
)
def test_an_approval_covers_only_its_tool_and_arguments(
    agent, linked, upstream, change, rule
):
    approval_id = execute(agent, "weather.delete_file", {"path": "/tmp/a"}).json()[
        "approval_id"
    ]
    approve(approval_id)
    call = {"name": "weather.delete_file", "arguments": {"path": "/tmp/a"}, **change}
    response = execute(agent, call["name"], call["arguments"], approval_id=approval_id)
    assert response.status_code == 409
    assert rule in response.json()["detail"]
    assert upstream.calls == []
    assert Approval.objects.get(pk=approval_id).status == "approved"


def test_an_approval_of_an_older_tool_version_is_refused(agent, linked, upstream):
    approval_id = execute(agent, "weather.delete_file", {"path": "/a"}).json()[
        "approval_id"
    ]
    approve(approval_id, tool_version=linked["delete_file"].version + 1)
    response = execute(
        agent, "weather.delete_file", {"path": "/a"}, approval_id=approval_id
    )
    assert response.status_code == 409
    assert "version" in response.json()["detail"]
    assert upstream.calls == []


def test_another_callers_approval_is_as_unknown_as_a_made_up_one(
    with_key, linked, upstream
):
    owner = with_key("agent", "agent-owner", allow_unsafe=True)
    approval_id = execute(owner, "weather.delete_file", {"path": "/a"}).json()[
        "approval_id"
    ]
    approve(approval_id)
    other = with_key("agent", "agent-other", allow_unsafe=True)
    stolen = execute(
        other, "weather.delete_file", {"path": "/a"}, approval_id=approval_id
    )
    made_up = execute(
        other, "weather.delete_file", {"path": "/a"}, approval_id=str(uuid.uuid4())
    )
    assert stolen.status_code == made_up.status_code == 409
    assert "no approval" in stolen.json()["detail"]
    assert upstream.calls == []
    assert Approval.objects.get(pk=approval_id).status == "approved"


@pytest.mark.parametrize(
    ("status", "rule"), [("pending", "waiting"), ("expired", "expired")]
)
def test_an_approval_not_yet_given_or_expired_does_not_run_the_call(
    agent, linked, upstream, status, rule
):
    approval_id = execute(agent, "weather.delete_file", {"path": "/a"}).json()[
        "approval_id"
    ]
    if status == "expired":
        approve(approval_id, expires=timezone.now())
    response = execute(
        agent, "weather.delete_file", {"path": "/a"}, approval_id=approval_id
    )
    assert response.status_code == 409
    assert rule in response.json()["detail"]
    assert upstream.calls == []


def test_a_denied_call_never_runs_and_is_recorded_denied(agent, linked, upstream):
    approval_id = execute(agent, "weather.delete_file", {"path": "/a"}).json()[
        "approval_id"
    ]
    approve(approval_id, status="denied", reason="not that file")
    response = execute(
        agent, "weather.delete_file", {"path": "/a"}, approval_id=approval_id
    )
    assert response.status_code == 403
    assert response.json()["outcome"] == "denied"
    assert "not that file" in response.json()["detail"]
    assert upstream.calls == []
    assert calls_recorded()[-1].output["outcome"] == "denied"


def test_an_upstream_error_is_failed_with_the_upstreams_own_content(
    agent, linked, upstream
):
    response = execute(agent, "weather.always_fails", {})
    assert response.status_code == 200
    answer = response.json()
    assert answer["outcome"] == "failed"
    assert answer["is_error"] is True
    assert answer["content"] == [
        {"type": "text", "text": "upstream: the disk is on fire"}
    ]
    [event] = outcomes_recorded()
    assert "disk is on fire" in event.output["reason"]
    assert event.output["is_error"] is True


def test_a_slow_upstream_times_out_within_the_sources_timeout(agent, upstream):
    link_source(upstream, name="slow", timeout_seconds=0.5)
    started = time.monotonic()
    response = execute(agent, "slow.slow_echo", {"text": "hi", "seconds": 3})
    assert time.monotonic() - started < 2.5
    answer = response.json()
    assert answer["outcome"] == "timed_out"
    assert answer["is_error"] is True
    assert answer["reason"] == "source 'slow': no answer within 0.5 s"
    [event] = outcomes_recorded()
    assert event.output["outcome"] == "timed_out"
    assert len(upstream.calls_to("slow_echo")) == 1  # never retried


def test_a_result_over_the_sources_cap_is_failed_and_not_given(agent, upstream):
    link_source(upstream, name="small", max_result_bytes=1000)
    small = execute(agent, "small.big_result", {"size": 100})
    assert small.json()["outcome"] == "ran"
    big = execute(agent, "small.big_result", {"size": 5000})
    answer = big.json()
    assert answer["outcome"] == "failed"
    assert answer["content"] == [] and answer["structured_content"] is None
    assert answer["reason"].startswith("result: ")
    assert "limit of 1000" in answer["reason"]
    assert calls_recorded()[-1].output["result_bytes"] > 5000


def test_an_unreachable_upstream_is_failed_naming_the_source(agent, upstream):
    tools = link_source(upstream, name="down")
    Source.objects.filter(name="down").update(url=f"http://127.0.0.1:{free_port()}/mcp")
    response = execute(agent, "down.get_forecast", {"city": "Paris"})
    answer = response.json()
    assert answer["outcome"] == "failed"
    assert answer["reason"].startswith("source 'down': ")
    assert "(after 2 attempts)" not in answer["reason"]  # not idempotent: once
    assert tools


def test_only_an_idempotent_tool_is_tried_twice_after_a_connection_failure(
    agent, upstream
):
    link_source(upstream, name="gone")
    Source.objects.filter(name="gone").update(url=f"http://127.0.0.1:{free_port()}/mcp")
    idempotent = execute(
        agent, "gone.set_thermostat", {"celsius": 20}, approval_id=None
    )
    approval_id = idempotent.json()["approval_id"]
    approve(approval_id)
    answer = execute(
        agent, "gone.set_thermostat", {"celsius": 20}, approval_id=approval_id
    ).json()
    assert answer["outcome"] == "failed"
    assert answer["reason"].endswith("(after 2 attempts)")


def test_the_sources_secret_headers_are_sent_upstream(agent, upstream):
    upstream.required_headers["x-api-key"] = "s3cret"
    link_source(upstream, name="keyed", headers={"X-Api-Key": "s3cret"})
    keyless = link_source(upstream, name="keyless")
    curator = make_user("carla", groups=("curator",))
    # The same upstream's tools again are near-copies: a curator lets them in.
    for review in ToolReview.objects.filter(tool__in=keyless.values(), state="pending"):
        allow_flagged(
            review, actor=curator, reason="the same upstream, without its key"
        )
    assert (
        execute(agent, "keyed.get_forecast", {"city": "Oslo"}).json()["outcome"]
        == "ran"
    )
    refused = execute(agent, "keyless.get_forecast", {"city": "Oslo"}).json()
    assert refused["outcome"] == "failed"
    assert "s3cret" not in str([e.input for e in calls_recorded()])


def test_editing_a_sources_url_sends_the_next_call_to_the_new_server(
    agent, linked, upstream
):
    assert execute(agent, FORECAST, {"city": "Rome"}).json()["outcome"] == "ran"
    with running_upstream() as other:
        Source.objects.filter(name="weather").update(url=other.url)
        assert execute(agent, FORECAST, {"city": "Rome"}).json()["outcome"] == "ran"
        assert len(other.calls) == 1
    assert len(upstream.calls) == 1


def test_a_setting_keeps_only_the_arguments_hash(agent, linked, upstream, settings):
    settings.QUIVER_CALL_ARGUMENTS_HASH_ONLY = True
    execute(agent, FORECAST, {"city": "Paris"})
    [start, event] = calls_recorded()
    assert "arguments" not in start.input
    assert "arguments" not in event.input
    assert event.input["arguments_hash"] == arguments_hash({"city": "Paris"})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": FORECAST, "arguments": ["Paris"]}, "arguments"),
        ({"name": FORECAST, "arguments": {"city": "x" * 20_001}}, "arguments"),
        ({"name": FORECAST, "arguments": {}, "approval_id": "nope"}, "approval_id"),
        ({"name": FORECAST, "arguments": {}, "surprise": 1}, "surprise"),
        ({"arguments": {}}, "name"),
    ],
)
def test_a_malformed_request_is_a_400_naming_the_field(
    agent, linked, upstream, body, field
):
    response = agent.post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["fields"]
    assert upstream.calls == []


def test_an_anonymous_caller_is_refused(api, linked, upstream):
    assert execute(api, FORECAST, {"city": "Paris"}).status_code in (401, 403)
    assert upstream.calls == []


def test_a_call_costs_three_queries_beside_the_upstream(
    linked, upstream, django_assert_num_queries
):
    """The catalog with its selection settings (the snapshot's freshness) and its
    tools of that name, their links and sources (one statement, calls.reads),
    the ``started`` row's INSERT before the upstream and the outcome's after it
    (each one statement, autocommit)."""
    make_client_key("agent-count", "agent")
    user = ApiClient.objects.select_related("user").get(name="agent-count").user
    user = type(user).objects.select_related("api_client").get(pk=user.pk)
    execute_call(user, name=FORECAST, arguments={"city": "Oslo"})  # warm caches
    with django_assert_num_queries(3):
        answer = execute_call(user, name=FORECAST, arguments={"city": "Oslo"})
    assert answer.outcome == "ran"


def test_unreadable_source_headers_are_a_503_and_nothing_is_sent(
    agent, linked, upstream
):
    Source.objects.filter(name="weather").update(headers_encrypted="not-a-token")
    response = execute(agent, FORECAST, {"city": "Oslo"})
    assert response.status_code == 503
    body = response.json()
    assert body["service"] == "source_headers"
    assert body["detail"].startswith("source 'weather': headers: cannot be decrypted")
    assert body["retryable"] is False and "Retry-After" not in response  # no help
    assert upstream.calls == []
    assert calls_recorded()[-1].output["outcome"] == "refused"
