"""``select``: normalise -> policy -> score -> rank -> cut -> explain (pickTools).

The function is pure: no database, no network. Semantic similarities and the LLM
come in as arguments (the app computes the first with pgvector and passes an
endpoint client as the second). A ``timeout_ms`` is checked between stages; when
it runs out the best ranking finished so far is returned with ``degraded=True``:
BM25F when it was computed, else registration order (seed 000). Policy always
runs, whatever the budget: safety is never skipped to save time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any

import numpy as np

from selection.engine.deadline import Deadline
from selection.engine.explain import reason
from selection.engine.normalize import NormalizedQuery, normalize
from selection.engine.policy import hidden_count, policy_codes, policy_exclusions
from selection.engine.ranking import (
    EXCLUSION_LIMIT,
    Ranking,
    cut,
    gate_category,
    ordered,
)
from selection.engine.scorers import SCORERS, ScoreContext, Scored
from selection.engine.scorers.learnt import apply_learnt
from selection.engine.scorers.simple import bm25f
from selection.engine.settings import SCORERS as SCORER_NAMES
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import (
    Exclusion,
    Pick,
    SelectionRequest,
    SelectionResult,
    SelectionStats,
)

LLMCallable = Callable[[str], str]
# ``stage(name)`` wraps each step (policy, scoring) of ``select``: the app passes
# one that opens a trace span per step; the engine knows nothing of tracing.
StageHook = Callable[[str], AbstractContextManager[Any]]
_NO_STAGE = nullcontext()
RANK_EXCLUSION_LIMIT = 10


class RequestError(ValueError):
    """A request that cannot be served; ``errors`` maps field names to messages."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in sorted(errors.items())))
        self.errors = errors


def _check(snapshot: CatalogSnapshot, request: SelectionRequest) -> str:
    """The scorer to use; raises ``RequestError`` for an invalid request."""
    errors = request.errors()
    name = request.scorer or snapshot.settings.default_scorer
    if name not in SCORER_NAMES:
        errors["scorer"] = f"must be one of {', '.join(SCORER_NAMES)}"
    if errors:
        raise RequestError(errors)
    return name


def _score(ctx: ScoreContext, name: str) -> tuple[Scored | None, bool]:
    """Run the requested scorer, or the best stage finished before the deadline."""
    if ctx.deadline.expired():
        return None, True
    lexical = bm25f(ctx)
    if ctx.deadline.expired():
        lexical.notes.append("Time ran out after lexical scoring; ranked by BM25F.")
        return lexical, True
    return apply_learnt(ctx, SCORERS[name](ctx)), False


def select(
    snapshot: CatalogSnapshot,
    request: SelectionRequest,
    semantic: Mapping[str, float] | None = None,
    llm: LLMCallable | None = None,
    clock: Callable[[], float] = time.perf_counter,
    vector: np.ndarray | None = None,
    stage: StageHook | None = None,
) -> SelectionResult:
    """Pick at most ``request.max_candidates`` tools (plus core tools) and explain.

    ``vector``: the request's unit vector, for a learnt signal (optional);
    ``stage``: a hook around each step (see ``StageHook``)."""
    name = _check(snapshot, request)
    deadline = Deadline(request.timeout_ms, clock)
    query = _catalog_names(normalize(request), snapshot)
    with stage("policy") if stage else _NO_STAGE:
        codes = policy_codes(snapshot, request)
    ctx = ScoreContext(snapshot, query, request, codes == 0, deadline, semantic, llm)
    ctx.vector = vector
    with stage("scoring") if stage else _NO_STAGE:
        scored, degraded = _score(ctx, name)
    if scored is None:
        return _registration_order(ctx, codes, name)
    return _finish(ctx, codes, scored, name, degraded)


def _catalog_names(query: NormalizedQuery, snap: CatalogSnapshot) -> NormalizedQuery:
    """The conversation's tools by their catalog names: a model calls a tool by
    the name it was shown, often the provider-safe one, while the ensemble's
    focus, transition and recency signals key on catalog names."""
    if not query.recent_tools:
        return query
    names = tuple(dict.fromkeys(_catalog_name(snap, n) for n in query.recent_tools))
    return query if names == query.recent_tools else replace(query, recent_tools=names)


def _catalog_name(snap: CatalogSnapshot, name: str) -> str:
    if name in snap.by_name:
        return name
    row = snap.by_provider_name.get(name)
    return name if row is None else snap.tools[row].name


def _eligible(ctx: ScoreContext, scored: Scored) -> np.ndarray:
    """Allowed tools with some evidence that no scorer threshold removed."""
    mask = ctx.allowed & (scored.scores > 0)
    for filtered in scored.filtered.values():
        mask &= ~filtered
    return mask


def _scorer_exclusions(ctx: ScoreContext, scored: Scored) -> list[Exclusion]:
    """Rank exclusions from the scorer's own thresholds (seed 002)."""
    details = {
        "lexical_overlap": "Fewer query words in its name and description than the "
        f"catalog's minimum of {ctx.snapshot.settings.min_lexical_overlap}.",
        "below_min_score": "Its combined score is under the catalog's minimum of "
        f"{ctx.snapshot.settings.min_combined_score:g}.",
    }
    out = []
    for code, mask in scored.filtered.items():
        rows = ordered(ctx.snapshot, scored.scores, mask & ctx.allowed)
        out += [
            Exclusion(
                ctx.snapshot.tools[r].name,
                "rank",
                code,
                details[code],
                round(float(scored.scores[r]), 4),
            )
            for r in rows[: _rank_limit(ctx)]
        ]
    return out


def _finish(
    ctx: ScoreContext, codes: np.ndarray, scored: Scored, name: str, degraded: bool
) -> SelectionResult:
    """Gate, threshold, cut and explain a finished scoring."""
    snap, req = ctx.snapshot, ctx.request
    eligible = _eligible(ctx, scored)
    inferred = None if req.categories is not None else scored.extras.get("category")
    before_gate = eligible
    eligible, gated = gate_category(snap, eligible, inferred)
    below = eligible & (scored.scores < req.min_score)
    no_tool, unfit = _no_tool_gate(ctx, scored, eligible & ~below)
    below |= unfit
    ranked = ordered(snap, scored.scores, eligible & ~below, _rank_depth(ctx))
    explore = snap.settings.exploration and scored.scorer == "ensemble"
    ranking = cut(snap, req, ctx.query, ranked, _core_rows(ctx), explore)
    skip = set(ranking.rows) | {snap.by_name[e.name] for e in ranking.excluded}
    head = ranked[: _rank_limit(ctx) + len(skip)]
    cut_rows = np.array([r for r in head if r not in skip], dtype=np.int64)
    excluded = policy_exclusions(snap, req, codes, scored.scores, EXCLUSION_LIMIT)
    excluded += gated + ranking.excluded + _scorer_exclusions(ctx, scored)
    excluded += _rank_rows(ctx, cut_rows, scored, "cut", ranking.rows)
    unfit_rows = ordered(snap, scored.scores, unfit, _rank_limit(ctx))
    learnt = bool(no_tool and no_tool["reason"] == "learnt_no_tool")
    detail = "learnt_no_tool" if learnt else None
    excluded += _rank_rows(ctx, unfit_rows, scored, "no_tool_fits", detail=detail)
    below_rows = ordered(snap, scored.scores, below & ~unfit, _rank_limit(ctx))
    excluded += _rank_rows(ctx, below_rows, scored, "below_min_score")
    policy = (codes != 0) | (before_gate & ~eligible)
    policy[[snap.by_name[e.name] for e in ranking.excluded]] = True
    account = exclusion_account(ctx, scored, ranking.rows, policy, below)
    # A picked tool (a core tool, say) is never also reported as excluded.
    picked = {snap.tools[r].name for r in ranking.rows}
    excluded = [e for e in excluded if e.name not in picked]
    picks = _picks(ctx, scored, ranking)
    if any(not p.core for p in picks):
        no_tool = None
    elif no_tool is None:
        no_tool = _no_tool_answer(ctx, scored, eligible)
    return SelectionResult(
        tools=picks,
        no_tool=no_tool,
        excluded=excluded,
        stats=_stats(ctx, scored, account, codes),
        scorer=scored.scorer,
        requested_scorer=name,
        degraded=degraded or bool(scored.fallback_reason),
        fallback_reason=scored.fallback_reason or ("timeout" if degraded else ""),
        notes=list(scored.notes),
        debug=_debug(ctx, scored) if req.explain else {},
    )


def exclusion_account(
    ctx: ScoreContext,
    scored: Scored,
    picked: list[int],
    policy: np.ndarray,
    below: np.ndarray,
) -> dict[str, int]:
    """Where every tool of the catalog went, each counted once, so that
    ``considered = picked + policy + below_min_score + scorer_threshold + cut +
    no_evidence`` holds exactly (a picked core tool counts as picked)."""
    rest = np.ones(len(ctx.snapshot.tools), dtype=bool)
    rest[picked] = False
    policy = policy & rest
    rest &= ~policy
    filtered = np.zeros_like(rest)
    for mask in scored.filtered.values():
        filtered |= mask
    no_evidence = rest & (scored.scores <= 0)
    threshold = rest & ~no_evidence & filtered
    below = rest & below & ~threshold & ~no_evidence
    cut_out = rest & ~no_evidence & ~threshold & ~below
    return {
        "considered": len(ctx.snapshot.tools),
        "picked": len(set(picked)),
        "policy": int(np.count_nonzero(policy)),
        "below_min_score": int(np.count_nonzero(below)),
        "scorer_threshold": int(np.count_nonzero(threshold)),
        "cut": int(np.count_nonzero(cut_out)),
        "no_evidence": int(np.count_nonzero(no_evidence)),
    }


def _stats(
    ctx: ScoreContext, scored: Scored, account: dict[str, int], codes: np.ndarray
) -> SelectionStats:
    """The audit counts of one answer."""
    policy, below = account["policy"], account["below_min_score"]
    return SelectionStats(
        account=account,
        hidden=hidden_count(codes),
        considered=len(ctx.snapshot.tools),
        excluded_by_policy=policy,
        below_min_score=below,
        candidates=int(np.count_nonzero(scored.scores > 0)),
        elapsed_ms=round(ctx.deadline.elapsed_ms(), 3),
        fusion=dict(scored.extras.get("fusion") or {}),
    )


def _rank_depth(ctx: ScoreContext) -> int | None:
    """How far down the ranking to sort: all of it only under a token budget."""
    if ctx.request.max_total_tokens is not None:
        return None
    s = ctx.snapshot.settings
    depth = ctx.request.max_candidates + len(s.core_tools) + s.exploration_depth
    return depth + EXCLUSION_LIMIT


RANK_DETAILS = {
    "cut": "Scored high enough but ranked below the top {k}.",
    "below_min_score": "Its score is under the request's minimum of {m:g}.",
    "no_tool_fits": "No tool fits the request: the best score is under the "
    "catalog's no-tool threshold of {t:g}.",
    "learnt_no_tool": "No tool fits the request: the catalog's labelled requests "
    "say so (its learnt no-tool decision).",
}


def _no_tool_gate(
    ctx: ScoreContext, scored: Scored, passing: np.ndarray
) -> tuple[dict[str, Any] | None, np.ndarray]:
    """When the best passing score is under the catalog's ``no_tool_threshold``,
    no tool fits: the answer and the rows it removes. A request with ``min_score``
    0 asks for the ranking whatever the scores, so it is never gated."""
    threshold = ctx.snapshot.settings.no_tool_threshold
    none = np.zeros(ctx.n, dtype=bool)
    if ctx.request.min_score <= 0 or not passing.any():
        return None, none
    best = float(scored.scores[passing].max(initial=0.0))
    if threshold > 0 and best < threshold:
        answer = {
            "reason": "below_no_tool_threshold",
            "best_score": round(best, 4),
            "threshold": threshold,
        }
        return answer, passing.copy()
    learnt = ctx.snapshot.learnt  # the learnt decision (selection.engine.notool)
    found = None
    if learnt is not None and learnt.no_tool_decision:
        knn = scored.signals.get("learnt_knn")  # its best: the nearest tool label
        near = float(knn.max(initial=0.0)) if knn is not None else None
        found = learnt.decide_no_tool(ctx.vector, scored.scores[ctx.allowed], near)
    return (found, passing.copy()) if found is not None else (None, none)


def _no_tool_answer(
    ctx: ScoreContext, scored: Scored, eligible: np.ndarray
) -> dict[str, Any]:
    """Why an answer without tools has none: no candidate, or all under the
    request's ``min_score``."""
    best = float(scored.scores[eligible].max(initial=0.0))
    if not eligible.any():
        return {"reason": "no_candidates", "best_score": 0.0, "threshold": None}
    return {
        "reason": "below_min_score",
        "best_score": round(best, 4),
        "threshold": ctx.request.min_score,
    }


def _rank_rows(
    ctx: ScoreContext,
    rows: np.ndarray,
    scored: Scored,
    code: str,
    picked: list[int] | None = None,
    detail: str | None = None,
) -> list[Exclusion]:
    """Rank-stage exclusions for ``rows`` (10, or 50 with ``explain``);
    ``detail``: another RANK_DETAILS entry than ``code``'s."""
    text = RANK_DETAILS[detail or code].format(
        k=ctx.request.max_candidates,
        m=ctx.request.min_score,
        t=ctx.snapshot.settings.no_tool_threshold,
    )
    listed = [int(r) for r in rows[: _rank_limit(ctx)]]
    notes = _learnt_details(ctx, scored, listed, picked or [])
    return [
        Exclusion(
            ctx.snapshot.tools[r].name,
            "rank",
            code,
            text + note,
            round(float(scored.scores[r]), 4),
        )
        for r, note in zip(listed, notes, strict=True)
    ]


def _learnt_details(
    ctx: ScoreContext, scored: Scored, rows: list[int], picked: list[int]
) -> list[str]:
    """What the learnt signal did to each excluded tool, when there is one; it
    decided when, without it, the tool would have outscored the last pick."""
    learnt = scored.signals.get("learnt")
    if learnt is None or not rows:
        return [""] * len(rows)
    last = min(picked, key=lambda r: float(scored.scores[r])) if picked else None
    bar = float(scored.scores[last] - learnt[last]) if last is not None else 0.0
    out = []
    for given, score in zip(
        learnt[rows].tolist(), scored.scores[rows].tolist(), strict=True
    ):
        text = f" The learnt signal (labelled requests) gave it {given:+.3f}."
        if last is not None and score - given > bar:
            text += (
                " The learnt signal decided: without it this tool would have "
                f"outranked {ctx.snapshot.tools[last].name}."
            )
        out.append(text)
    return out


def _rank_limit(ctx: ScoreContext) -> int:
    """How many rank-stage exclusions to list: a few, or many when explaining."""
    return EXCLUSION_LIMIT if ctx.request.explain else RANK_EXCLUSION_LIMIT


def _core_rows(ctx: ScoreContext) -> list[int]:
    """Rows of the catalog's core tools that policy lets through."""
    return [
        r
        for r in ctx.snapshot.rows(list(ctx.snapshot.settings.core_tools))
        if ctx.allowed[r]
    ]


def _picks(ctx: ScoreContext, scored: Scored, ranking: Ranking) -> list[Pick]:
    """``Pick`` objects with signals and a reason sentence."""
    out, index = [], ctx.snapshot.index
    for row in ranking.rows:
        tool = ctx.snapshot.tools[row]
        signals = scored.signal_values(row)
        flags = {"core": row in ranking.core, "exploration": row == ranking.exploration}
        out.append(
            Pick(
                name=tool.name,
                score=round(float(scored.scores[row]), 4),
                reason=reason(
                    tool, ctx.query, signals, flags, index.counts_in_examples
                ),
                signals=signals,
                requires_approval=tool.requires_approval,
                core=flags["core"],
                exploration=flags["exploration"],
            )
        )
    return out


def _registration_order(
    ctx: ScoreContext, codes: np.ndarray, name: str
) -> SelectionResult:
    """Seed 000's timeout fallback: the first allowed tools by position."""
    snap, req = ctx.snapshot, ctx.request
    rows = np.flatnonzero(ctx.allowed)
    rows = rows[np.argsort(snap.order[rows], kind="stable")][: req.max_candidates]
    zeros = np.zeros(len(snap.tools))
    picks = [
        Pick(
            name=snap.tools[r].name,
            score=0.0,
            reason=reason(snap.tools[r], ctx.query, {}, {"fallback_order": True}),
            requires_approval=snap.tools[r].requires_approval,
        )
        for r in rows
    ]
    return SelectionResult(
        tools=picks,
        excluded=policy_exclusions(snap, req, codes, zeros, EXCLUSION_LIMIT),
        stats=SelectionStats(
            len(snap.tools),
            int(np.count_nonzero(codes)),
            0,
            0,
            hidden=hidden_count(codes),
            account={
                "considered": len(snap.tools),
                "picked": len(rows),
                "policy": int(np.count_nonzero(codes)),
                "below_min_score": 0,
                "scorer_threshold": 0,
                "cut": len(snap.tools) - len(rows) - int(np.count_nonzero(codes)),
                "no_evidence": 0,
            },
        ),
        scorer="registration_order",
        requested_scorer=name,
        degraded=True,
        fallback_reason="timeout",
        notes=["The time budget ran out before any scorer finished."],
    )


def _debug(ctx: ScoreContext, scored: Scored) -> dict[str, object]:
    """Extra provenance when ``explain`` is set: terms, context and extras."""
    query: NormalizedQuery = ctx.query
    extras = {k: v for k, v in scored.extras.items()}
    return {
        "terms": dict(sorted(query.terms.items())),
        "recent_tools": list(query.recent_tools),
        "embed_text": query.embed_text,
        "extras": extras,
        "snapshot": {"catalog": ctx.snapshot.catalog, "version": ctx.snapshot.version},
    }
