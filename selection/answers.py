"""The /select answer as one type: built by the select service, rendered by
``SelectOutputSerializer`` (so the OpenAPI schema and the answer cannot drift), and
recorded, without the provider definitions, in the audit log."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from selection.engine.types import Exclusion, SelectionRequest, SelectionResult


@dataclass(frozen=True)
class AnsweredTool:
    """One picked tool as the caller sees it."""

    name: str
    score: float
    reason: str
    signals: dict[str, float]
    requires_approval: bool
    core: bool
    exploration: bool
    definition: dict[str, Any]


@dataclass(frozen=True)
class SelectionAnswer:
    """Everything a /select answer holds; ``excluded`` only with ``explain``."""

    catalog: str
    catalog_version: int
    settings_version: int
    scorer: str
    tools: tuple[AnsweredTool, ...]
    stats: dict[str, Any]
    cached: bool
    degraded: bool
    fallback_reason: str = ""
    excluded: tuple[Exclusion, ...] | None = None
    selection_id: str = ""
    request_id: str | None = None
    # When no tool fits: {"reason", "best_score", "threshold"} (else None).
    no_tool: dict[str, Any] | None = None
    # Ranked by words alone although the scorer weighs meaning too (the catalog's
    # tool vectors are not ready, or not of a model this server has), and why.
    words_only: bool = False
    words_only_reason: str = ""
    # For the audit record only (never rendered): every exclusion the engine named,
    # whether or not the caller asked for explain.
    audit_exclusions: tuple[Exclusion, ...] = field(
        default=(), repr=False, compare=False, metadata={"audit_only": True}
    )

    @property
    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    def served(
        self,
        *,
        selection_id: str,
        request_id: str | None,
        latency_ms: float,
        cached: bool,
        timings_ms: dict[str, float] | None = None,
    ) -> SelectionAnswer:
        """This answer as served once: its own id, its latency and per-stage
        timings (never a cached answer's old ones), cached or not."""
        stats = {
            **self.stats,
            "latency_ms": round(latency_ms, 3),
            "timings_ms": dict(timings_ms or {}),
        }
        return replace(
            self,
            selection_id=selection_id,
            request_id=request_id,
            stats=stats,
            cached=cached,
        )

    def with_timings(self, timings_ms: dict[str, float]) -> SelectionAnswer:
        """The same answer with final per-stage timings (after the audit write)."""
        return replace(self, stats={**self.stats, "timings_ms": dict(timings_ms)})

    def audit_record(self, versions: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The answer for the audit log: no (large, reproducible) definitions, and
        each pick's version and content hash; ``excluded`` is every exclusion the
        engine named. Built field by field: ``asdict`` would deep-copy every
        definition only to drop it (most of the audit write's time)."""
        record = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("tools", "excluded", "audit_exclusions")
        }
        record["tools"] = [
            {
                **{f.name: getattr(tool, f.name) for f in _TOOL_FIELDS},
                **versions.get(tool.name, {}),
            }
            for tool in self.tools
        ]
        record["excluded"] = [
            {f.name: getattr(exclusion, f.name) for f in _EXCLUSION_FIELDS}
            for exclusion in self.audit_exclusions
        ]
        return record


_TOOL_FIELDS = [f for f in fields(AnsweredTool) if f.name != "definition"]
# Every field of an exclusion is a plain value, so a flat copy is the whole copy
# (``asdict`` deep-copies each, and a large catalog's answer names a hundred).
_EXCLUSION_FIELDS = fields(Exclusion)


def build_answer(
    *,
    catalog: str,
    catalog_version: int,
    settings_version: int,
    result: SelectionResult,
    request: SelectionRequest,
    definitions: dict[str, dict[str, Any]],
) -> SelectionAnswer:
    """The answer for one engine result (before it is served)."""
    return SelectionAnswer(
        catalog=catalog,
        catalog_version=catalog_version,
        settings_version=settings_version,
        scorer=result.scorer,
        tools=tuple(_tool(pick, definitions[pick.name]) for pick in result.tools),
        stats={
            "considered": result.stats.considered,
            "excluded_by_policy": result.stats.excluded_by_policy,
            "below_min_score": result.stats.below_min_score,
            "hidden": result.stats.hidden,
            "account": dict(result.stats.account),
            "engine_ms": round(result.stats.elapsed_ms, 3),
            "fusion": dict(result.stats.fusion),
        },
        cached=False,
        degraded=result.degraded,
        fallback_reason=result.fallback_reason,
        excluded=tuple(result.excluded) if request.explain else None,
        no_tool=result.no_tool,
        audit_exclusions=tuple(result.excluded),
    )


def _tool(pick: Any, definition: dict[str, Any]) -> AnsweredTool:
    return AnsweredTool(
        name=pick.name,
        score=round(pick.score, 6),
        reason=pick.reason,
        signals={k: round(v, 6) for k, v in pick.signals.items()},
        requires_approval=pick.requires_approval,
        core=pick.core,
        exploration=pick.exploration,
        definition=definition,
    )


ANSWER_FIELDS = tuple(
    name
    for name, spec in SelectionAnswer.__dataclass_fields__.items()
    if not spec.metadata.get("audit_only")
)
