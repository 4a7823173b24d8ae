"""The engine's value types: tools, requests and results (plain frozen data).

Everything here is deliberately free of Django and of any I/O so the engine can be
unit-tested with hand-made catalogs and driven by the app, the benchmark or a
script alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SemanticScores = Mapping[str, float]
"""Tool name -> cosine similarity for a candidate pool computed outside the engine.

A tool missing from the mapping was not in the pool (no semantic evidence)."""

MAX_CANDIDATES_LIMIT = 128

# "hidden" comes first: tools the caller could never be offered (its roles or
# unsafe permission forbid them) are counted but never named in an answer.
HIDDEN = "hidden"
POLICY_REASONS = (
    HIDDEN,
    "status",
    "blocked",
    "not_allowed",
    "unsafe",
    "role",
    "no_schema_mode",
    "capability",
    "budget_cost",
    "category",
    "budget_tokens",
)
RANK_REASONS = ("below_min_score", "lexical_overlap", "cut")


@dataclass(frozen=True)
class ToolRecord:
    """One tool as the engine sees it: text to match plus the facts policy checks."""

    id: int
    name: str
    provider_name: str = ""
    title: str = ""
    description: str = ""
    category: str = ""
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    avoid_when: str = ""
    param_text: str = ""
    safe: bool = True
    risk_level: str = "low"
    requires_approval: bool = False
    allowed_roles: tuple[str, ...] = ()
    allow_no_schema: bool = False
    no_schema_mode: str = ""
    capabilities: tuple[str, ...] = ()
    cost_per_call: float = 0.0
    prompt_tokens: int = 0
    status: str = "active"
    position: int = 0
    has_schema: bool = True
    # The name its file or server gave it (catalog's Tool.original_name).
    original_name: str = ""


@dataclass(frozen=True)
class SelectionRequest:
    """What a caller asks for: a query or chat messages, plus limits and filters.

    ``roles=None`` means "do not filter by role"; an empty tuple means the caller
    has no role (only tools open to any role pass). ``None`` for the other filters
    means "no filter".
    """

    query: str | Mapping[str, Any] | None = None
    messages: Sequence[Mapping[str, Any]] | None = None
    max_candidates: int = 3
    min_score: float = 0.05
    scorer: str | None = None
    allow_unsafe: bool = False
    roles: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    allow_tools: tuple[str, ...] | None = None
    block_tools: tuple[str, ...] | None = None
    max_cost_per_call: float | None = None
    max_total_tokens: int | None = None
    require_capabilities: tuple[str, ...] | None = None
    recent_tools: tuple[str, ...] = ()
    explain: bool = False
    timeout_ms: float | None = None
    # What the caller may ever be offered, whatever it asks: its roles (None = all)
    # and its unsafe permission. Tools outside it are hidden, not named.
    visible_roles: tuple[str, ...] | None = None
    visible_unsafe: bool = True
    # May the caller know of tools held for review (curators: yes; agents: no)?
    visible_held: bool = True

    def errors(self) -> dict[str, str]:
        """Field-named problems with this request (empty when it is usable)."""
        problems: dict[str, str] = {}
        if self.query is None and not self.messages:
            problems["query"] = "give a query or messages"
        if not 1 <= self.max_candidates <= MAX_CANDIDATES_LIMIT:
            problems["max_candidates"] = f"must be 1..{MAX_CANDIDATES_LIMIT}"
        if not 0.0 <= self.min_score <= 1.0:
            problems["min_score"] = "must be between 0 and 1"
        if self.timeout_ms is not None and self.timeout_ms < 0:
            problems["timeout_ms"] = "must be at least 0"
        if self.max_total_tokens is not None and self.max_total_tokens < 0:
            problems["max_total_tokens"] = "must be at least 0"
        if self.max_cost_per_call is not None and self.max_cost_per_call < 0:
            problems["max_cost_per_call"] = "must be at least 0"
        return problems


@dataclass(frozen=True)
class Pick:
    """One selected tool: score 0..1, a readable reason and each signal's value."""

    name: str
    score: float
    reason: str
    signals: dict[str, float] = field(default_factory=dict)
    requires_approval: bool = False
    core: bool = False
    exploration: bool = False


@dataclass(frozen=True)
class Exclusion:
    """A tool left out, the stage that dropped it, a reason code and a sentence."""

    name: str
    stage: str
    reason: str
    detail: str
    score: float | None = None


@dataclass(frozen=True)
class SelectionStats:
    """Counts for the audit trail: how many tools were looked at and dropped."""

    considered: int
    excluded_by_policy: int
    below_min_score: int
    candidates: int = 0
    elapsed_ms: float = 0.0
    hidden: int = 0
    # considered = picked + policy + below_min_score + scorer_threshold + cut +
    # no_evidence (see engine.exclusion_account); hidden tools are in policy.
    account: dict[str, int] = field(default_factory=dict)
    # How the hybrid fused its signals for this catalog and why
    # (selection.engine.fusion.describe); empty for the other scorers.
    fusion: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SelectionResult:
    """The engine's answer. ``degraded`` is set when a deadline or fallback hit.

    ``scorer`` is the scorer that produced the ranking; ``requested_scorer`` what
    the request (or the catalog default) asked for; ``fallback_reason`` says why
    they differ. ``excluded`` lists policy exclusions first (most relevant first,
    at most ``EXCLUSION_LIMIT`` of them, ``stats`` has the full counts).
    """

    tools: list[Pick]
    excluded: list[Exclusion]
    stats: SelectionStats
    scorer: str
    requested_scorer: str
    degraded: bool = False
    fallback_reason: str = ""
    notes: list[str] = field(default_factory=list)
    debug: dict[str, Any] = field(default_factory=dict)
    # Set when the answer offers no tool: {"reason", "best_score", "threshold"}.
    no_tool: dict[str, Any] | None = None

    @property
    def names(self) -> list[str]:
        """The picked tool names, best first."""
        return [p.name for p in self.tools]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form of the result (for the API and the audit log)."""
        from dataclasses import asdict

        return asdict(self)
