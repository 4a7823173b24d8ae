"""The answers of a Quiver server, as typed dictionaries (plain JSON at run time).

Field names follow the server's serializers (``selection/api/serializers.py``); a
newer server may add fields, which stay in the dictionaries.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

Format = Literal[
    "canonical", "openai", "openai-responses", "anthropic", "ollama", "mcp"
]
CallFormat = Literal["openai", "openai-responses", "anthropic", "ollama", "mcp"]


class Pick(TypedDict):
    """One selected tool: ``definition`` is in the format the request asked for."""

    name: str
    score: float
    reason: str
    signals: dict[str, float]
    requires_approval: bool
    core: bool
    exploration: bool
    definition: dict[str, Any]


class Exclusion(TypedDict):
    name: str
    stage: Literal["policy", "rank"]
    reason: str
    detail: str
    score: float | None


class Selection(TypedDict):
    """The answer of ``POST /api/v1/select``."""

    selection_id: str
    request_id: str | None
    catalog: str
    catalog_version: int
    settings_version: int
    scorer: str
    tools: list[Pick]
    excluded: NotRequired[list[Exclusion]]
    stats: dict[str, Any]
    cached: bool
    degraded: bool
    fallback_reason: str
    # Ranked by words alone: the catalog's tool embeddings are not ready.
    words_only: bool
    words_only_reason: str


class BatchError(TypedDict):
    """A batch item that failed: the API's error envelope, in the item's place."""

    error: str
    detail: str
    fields: NotRequired[dict[str, Any]]


class CallError(TypedDict):
    pointer: str
    rule: str
    message: str


class CheckedCall(TypedDict):
    tool: str
    call_id: str | None
    valid: bool
    errors: list[CallError]
    flags: list[str]
    arguments: NotRequired[Any]
    hint: str
    tool_version: int | None


class ToolCallsValidation(TypedDict):
    """The answer of ``POST /api/v1/tool-calls/validate``."""

    validation_id: str
    selection_id: str | None
    catalog: str
    catalog_version: int
    format: str
    valid: bool
    calls: list[CheckedCall]


class ScreeningFinding(TypedDict):
    """One thing a result's screening found: the rule, its class, where."""

    rule: str
    # ``class`` is a keyword: read it as finding["class"].
    where: str
    action: Literal["redact", "flag", "block"]


class Screening(TypedDict):
    """What a result's screening found and did (never the matched text):
    ``action`` is the strongest taken."""

    action: Literal["redact", "flag", "block"]
    findings: list[ScreeningFinding]


class ToolCallResult(TypedDict):
    """The answer of ``POST /api/v1/tool-calls/execute`` when the tool's server
    was tried: ``outcome`` ``ran``, ``failed`` (the upstream's error result, or no
    result: ``reason`` says why) or ``timed_out``; ``content`` and
    ``structured_content`` are the upstream's result as screened (``screening``
    says what was redacted, flagged or withheld, when anything was)."""

    outcome: Literal["ran", "failed", "timed_out"]
    tool: str
    reason: str
    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    is_error: bool
    approval_id: str | None
    call_id: str | None
    screening: NotRequired[Screening]


ApprovalStatus = Literal["pending", "approved", "denied", "expired", "used"]


class Approval(TypedDict):
    """The answer of ``GET /api/v1/approvals/{id}``; ``wait_for_approval``
    returns it once ``status`` is no longer ``pending``: ``approved`` (send the
    same call again with ``approval_id``), ``denied`` (``reason`` says why),
    ``expired`` (nobody decided in time) or ``used`` (the call ran)."""

    id: str
    status: ApprovalStatus
    catalog: str
    tool_name: str
    tool_version: int
    arguments: dict[str, Any]
    arguments_hash: str
    requester: str
    selection_id: str | None
    request_id: str | None
    decider: str
    reason: str
    created: str
    decided: str | None
    expires: str
    used: str | None
