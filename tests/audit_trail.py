"""A small, real audit trail for the compliance console's tests: selections
through /select, a tool-call check against one of them, an API key made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.models import AuditEvent
from tests.factories import make_client_key, make_tool


@dataclass
class Trail:
    refund: AuditEvent
    weather: AuditEvent
    nothing: AuditEvent
    validation: AuditEvent
    key_created: AuditEvent


def _select(api: Any, query: str, **options: Any) -> AuditEvent:
    body = {"query": query, "scorer": "bm25f", "explain": True, "max_candidates": 2}
    body |= options
    answer = api.post("/api/v1/select", body, format="json")
    assert answer.status_code == 200, answer.content
    return AuditEvent.objects.get(selection_id=answer.json()["selection_id"])


def make_audit_trail(api: Any) -> Trail:
    """Three selections by agent support-bot (the first blocks get_weather), one
    invalid tool call, one key made."""
    make_tool(name="refund_payment", description="Refund a customer's card payment.")
    make_tool(name="get_weather", description="Current weather for a city.")
    make_tool(name="wipe_disk", description="Erase a disk.", safe=False)
    key = make_client_key("support-bot", "agent")
    key_created = AuditEvent.objects.get(event_type="client_created")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    refund = _select(api, "refund the card payment", block_tools=["get_weather"])
    weather = _select(api, "weather in a city")
    nothing = _select(api, "zzzz qqqq")
    call = {"name": "wipe_disk", "arguments": {}}
    checked = api.post(
        "/api/v1/tool-calls/validate",
        {
            "output": {
                "content": [
                    {"type": "tool_use", "id": "c1", "input": {}, "name": call["name"]}
                ],
                "role": "assistant",
            },
            "selection_id": str(refund.selection_id),
        },
        format="json",
    )
    assert checked.status_code == 200, checked.content
    api.credentials()
    validation = AuditEvent.objects.get(event_type="validation")
    return Trail(refund, weather, nothing, validation, key_created)
