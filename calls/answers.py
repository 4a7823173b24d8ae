"""What a caller is told about a call, over REST and MCP alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calls.models import Approval

NEEDS_AUTHORIZATION = "needs_authorization"
PENDING_REASON = (
    "approval: a person must approve this call; re-send it with approval_id"
)


@dataclass
class CallAnswer:
    """What the caller is told. ``status`` is the REST status of the outcome;
    ``limit`` names the limit a 429/503 refusal hit (calls.limits)."""

    outcome: str
    tool: str
    reason: str = ""
    status: int = 200
    refused_field: str = ""
    content: list[dict[str, Any]] | None = None
    structured_content: dict[str, Any] | None = None
    is_error: bool = True
    approval_id: str | None = None
    call_id: str | None = None
    errors: list[dict[str, str]] = field(default_factory=list)
    hint: str = ""
    flags: list[str] = field(default_factory=list)
    limit: str = ""
    # What the result's screening found and did (screening.results), if anything.
    screening: dict[str, Any] | None = None
    # needs_authorization: where the person connects their account.
    authorization_url: str = ""

    def as_dict(self) -> dict[str, Any]:
        answer = {
            "outcome": self.outcome,
            "tool": self.tool,
            "reason": self.reason,
            "content": self.content or [],
            "structured_content": self.structured_content,
            "is_error": self.is_error,
            "approval_id": self.approval_id,
            "call_id": self.call_id,
        }
        if self.outcome == "pending":
            answer["status"] = "pending_approval"
        if self.errors or self.hint:
            answer.update(errors=self.errors, hint=self.hint)
        if self.limit:
            answer["limit"] = self.limit
        if self.screening:
            answer["screening"] = self.screening
        if self.outcome == NEEDS_AUTHORIZATION:
            answer["status"] = NEEDS_AUTHORIZATION
            answer["authorization_url"] = self.authorization_url or None
        return answer


def pending_answer(tool: str, approval: Approval, *, call_id: str) -> CallAnswer:
    """The 202 of a call waiting for a person: its approval's id and expiry."""
    approval_id = str(approval.id)
    return CallAnswer(
        "pending",
        tool,
        PENDING_REASON,
        status=202,
        refused_field="approval_id",
        approval_id=approval_id,
        call_id=call_id,
        structured_content={
            "status": "pending_approval",
            "approval_id": approval_id,
            "tool": tool,
            "expires": approval.expires.isoformat(),
        },
        content=[
            {
                "type": "text",
                "text": f"pending_approval {approval_id}: {PENDING_REASON}",
            }
        ],
    )


def with_absolute_link(answer: CallAnswer, base: str) -> CallAnswer:
    """``answer`` with its connect link made absolute on ``base`` (Quiver's
    address as the caller reached it) when it is a path."""
    if answer.authorization_url.startswith("/"):
        answer.authorization_url = base.rstrip("/") + answer.authorization_url
    return answer
