"""Rank, gate, cut: from scores to the ordered list of picked rows.

Ties break by registration position, then name, so the same snapshot, request and
semantic scores always give the same answer. The exploration slot (seed 004)
draws from a random generator seeded by the catalog's fixed seed, the snapshot
version and the query text: it varies between queries, never between runs.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

import numpy as np

from selection.engine.normalize import NormalizedQuery
from selection.engine.policy import apply_token_budget
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import Exclusion, SelectionRequest

EXCLUSION_LIMIT = 50


@dataclass
class Ranking:
    """Picked rows (core tools first) and what the ranking stage left out."""

    rows: list[int] = field(default_factory=list)
    core: set[int] = field(default_factory=set)
    exploration: int | None = None
    excluded: list[Exclusion] = field(default_factory=list)
    policy_dropped: int = 0
    below_min_score: int = 0


def ordered(
    snapshot: CatalogSnapshot,
    scores: np.ndarray,
    mask: np.ndarray,
    limit: int | None = None,
) -> np.ndarray:
    """Rows in ``mask`` by descending score, then position, then name.

    With ``limit`` only the best ``limit`` rows are sorted (ties at the boundary
    are all kept), so a 100,000-tool catalog never sorts its whole tail.
    """
    rows = np.flatnonzero(mask)
    if limit is not None and len(rows) > limit:
        cutoff = np.partition(scores[rows], len(rows) - limit)[len(rows) - limit]
        rows = rows[scores[rows] >= cutoff]
    order = rows[np.lexsort((snapshot.order[rows], -scores[rows]))]
    return order if limit is None else order[:limit]


def _rank_exclusions(
    snapshot: CatalogSnapshot,
    rows: np.ndarray,
    scores: np.ndarray,
    reason: str,
    detail: str,
) -> list[Exclusion]:
    """Up to ``EXCLUSION_LIMIT`` rank-stage exclusions with their scores."""
    return [
        Exclusion(
            snapshot.tools[r].name, "rank", reason, detail, round(float(scores[r]), 4)
        )
        for r in rows[:EXCLUSION_LIMIT]
    ]


def gate_category(
    snapshot: CatalogSnapshot,
    eligible: np.ndarray,
    inferred: tuple[str, float] | None,
) -> tuple[np.ndarray, list[Exclusion]]:
    """Seed 002's gate: keep only the inferred category when confident enough."""
    threshold = snapshot.settings.category_confidence_threshold
    if not inferred or not inferred[0] or threshold is None or inferred[1] < threshold:
        return eligible, []
    category, confidence = inferred
    rows = snapshot.arrays.category_rows.get(category.lower(), np.zeros(0, np.int64))
    keep = np.zeros(len(eligible), dtype=bool)
    keep[rows] = True
    dropped = np.flatnonzero(eligible & ~keep)
    detail = (
        f"The request looks like category '{category}' (confidence "
        f"{confidence:.2f}) and this tool is in another category."
    )
    out = [
        Exclusion(snapshot.tools[r].name, "policy", "category", detail)
        for r in dropped[:EXCLUSION_LIMIT]
    ]
    return eligible & keep, out


def exploration_rng(snapshot: CatalogSnapshot, query: NormalizedQuery) -> random.Random:
    """A generator fixed by the catalog's seed, the version and the query."""
    key = f"{snapshot.settings.exploration_seed}|{snapshot.version}|{query.text}"
    return random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))


def _explore(
    snapshot: CatalogSnapshot, query: NormalizedQuery, rest: list[int], depth: int
) -> int | None:
    """One row drawn from the ranked rows just below the cut (seed 004)."""
    pool = rest[:depth]
    if not pool:
        return None
    return pool[exploration_rng(snapshot, query).randrange(len(pool))]


def cut(
    snapshot: CatalogSnapshot,
    request: SelectionRequest,
    query: NormalizedQuery,
    ranked: np.ndarray,
    core_rows: list[int],
    explore: bool,
) -> Ranking:
    """Take the top rows within the token budget, plus core tools and exploration.

    Core tools (seed 004) come first and do not count against ``max_candidates``;
    with exploration on, the last slot is drawn from the rows just below the cut.
    """
    out = Ranking(core=set(core_rows))
    k = request.max_candidates
    depth = max(snapshot.settings.exploration_depth, k) if explore else k
    wanted = [*core_rows, *(int(r) for r in ranked[: depth + len(core_rows)])]
    unique = list(dict.fromkeys(wanted))
    kept, dropped = apply_token_budget(
        snapshot, unique, request.max_total_tokens, want=len(core_rows) + depth
    )
    out.excluded.extend(dropped)
    out.policy_dropped = len(dropped)
    rest = [r for r in kept if r not in out.core]
    out.rows = [r for r in kept if r in out.core]
    explore = explore and k >= 2 and len(rest) > k - 1
    out.rows += rest[: k - 1] if explore else rest[:k]
    if explore:
        out.exploration = _explore(snapshot, query, rest[k - 1 :], depth - (k - 1))
        if out.exploration is not None:
            out.rows.append(out.exploration)
    return out
