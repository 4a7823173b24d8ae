"""A refusal on /mcp costs 1 of the key's rate budget, as every audited request
does; past the budget refusals are still answered, and only the first of the
minute is recorded (saying the rest are not), so no key writes audit rows faster
than its budget. The gateway's services, in this process, with the minute held
still (config.ratelimit.clock) so the window cannot turn mid-test."""

from __future__ import annotations

import time
import uuid

import pytest
from django.core.exceptions import ValidationError as DjangoValidationError

from audit.models import AuditEvent
from config import ratelimit
from gateway import refusals, services
from identity.models import ApiClient
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def still_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    now = time.time()
    monkeypatch.setattr(ratelimit, "clock", lambda: now)


def key_user(name: str, limit: int) -> object:
    make_client_key(name, "agent", rate_limit_per_minute=limit)
    return ApiClient.objects.get(name=name).user


def refuse(work: object, user: object, arguments: dict) -> str:
    with pytest.raises(services.ToolRefused) as refused:
        work(user, arguments, uuid.uuid4())  # type: ignore[operator]
    return str(refused.value)


def rows() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="mcp_refused").order_by("pk"))


def test_refusals_past_the_budget_are_answered_and_recorded_once_a_minute(
    still_minute,
):
    user = key_user("agent-budget", 2)
    answers = [
        refuse(services.search, user, {"query": "x", "max_results": 0})
        for _ in range(5)
    ]
    assert set(answers) == {"max_results: Ensure this value is greater than or "
                            "equal to 1."}  # fmt: skip
    recorded = rows()
    assert len(recorded) == 3
    assert [row.output.get("note") for row in recorded[:2]] == [None, None]
    assert recorded[2].output["note"] == refusals.OVER_BUDGET


def test_a_search_over_the_budget_is_a_rate_refusal_with_its_row(still_minute):
    make_tool(name="get_weather", description="Weather.")
    user = key_user("agent-rate", 1)
    found = services.search(user, {"query": "weather"}, uuid.uuid4())
    assert found["tools"]
    text = refuse(services.search, user, {"query": "weather"})
    assert text.startswith("rate: over the limit of 1")
    [row] = rows()
    assert row.output["field"] == "rate"
    assert row.output["note"] == refusals.OVER_BUDGET
    refuse(services.search, user, {"query": "weather"})
    assert len(rows()) == 1  # the rest of the minute: answered, not recorded


def test_a_details_refusal_costs_one_a_good_details_nothing(still_minute):
    make_tool(name="get_weather", description="Weather.")
    user = key_user("agent-reads", 1)
    for _ in range(3):
        services.details(user, {"names": ["get_weather"]}, uuid.uuid4())
    refuse(services.details, user, {"names": []})
    refuse(services.details, user, {"names": []})
    recorded = rows()
    assert len(recorded) == 2
    assert "note" not in recorded[0].output
    assert recorded[1].output["note"] == refusals.OVER_BUDGET


def test_a_call_refusal_is_charged_once(still_minute):
    user = key_user("agent-call", 1)
    refuse(services.call, user, {"name": "x", "arguments": {}, "extra": 1})
    [row] = rows()  # malformed: the gateway's refusal, not a call's row
    assert "note" not in row.output  # within the budget of 1: charged once
    assert not AuditEvent.objects.filter(event_type="tool_call").exists()


def test_a_models_validation_error_is_a_refusal_naming_the_field(still_minute):
    """A full_clean refusal reaching the gateway is answered as REST answers it
    (a 400 naming the field there), never as an internal failure."""
    user = key_user("agent-clean", 5)
    attempt = refusals.Attempt(user, uuid.uuid4(), "tools/call", "call_tool", {})

    def work() -> None:
        raise DjangoValidationError({"arguments": ["This field cannot be blank."]})

    with pytest.raises(services.ToolRefused) as refused:
        services._guarded(attempt, None, work)
    assert str(refused.value) == "arguments: This field cannot be blank."
    [row] = rows()
    assert row.output["field"] == "arguments"
