"""Seed 002's combined score: semantic similarity fused with lexical signals.

Candidates are the caller's semantic pool plus the ``candidate_pool`` best tools
by BM25F (so an exact-name match outside the embedding pool is not lost). Each
candidate gets

    combined = sum(w_i * signal_i) / sum(w_i)

over the signals ``embed`` (rescaled cosine), ``lexical`` (BM25F coverage),
``tag``, ``name`` (share of the tool's own name the query mentions) and
``category`` (the tool is in the category the ranking points at). Without
semantic scores the ``embed`` weight drops out and the rest are renormalised.
``min_lexical_overlap`` and ``min_combined_score`` then filter (seed 002).
"""

from __future__ import annotations

import numpy as np

from selection.engine.scorers import lexical
from selection.engine.scorers.base import ScoreContext, Scored
from selection.engine.scorers.simple import (
    lexical_scores,
    semantic_evidence,
    semantic_raw,
)


def top_rows(scores: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Rows of the ``k`` best positive scores within ``mask`` (any order)."""
    rows = np.flatnonzero(mask & (scores > 0))
    if len(rows) > k:
        rows = rows[np.argpartition(-scores[rows], k - 1)[:k]]
    return rows


def candidate_mask(ctx: ScoreContext) -> np.ndarray:
    """The semantic pool plus the lexical top ``candidate_pool`` (allowed tools)."""
    pool = ctx.snapshot.settings.candidate_pool
    mask = np.zeros(ctx.n, dtype=bool)
    mask[top_rows(lexical_scores(ctx), ctx.allowed, pool)] = True
    if ctx.semantic is not None:
        mask[
            [ctx.snapshot.by_name[n] for n in ctx.semantic if n in ctx.snapshot.by_name]
        ] = True
    return mask


def category_signal(
    ctx: ScoreContext, base: np.ndarray
) -> tuple[np.ndarray, str, float]:
    """1.0 for tools in the category that dominates the top of ``base``.

    The inferred category's confidence is its share of the top ten scores; the
    engine only gates on it above ``category_confidence_threshold`` (seed 002).
    """
    rows = top_rows(base, ctx.allowed, 10)
    totals: dict[str, float] = {}
    for row in rows:
        category = ctx.snapshot.tools[row].category
        if category:
            totals[category] = totals.get(category, 0.0) + float(base[row])
    mass = float(base[rows].sum())
    if not totals or mass <= 0:
        return np.zeros(ctx.n), "", 0.0
    best = min(totals, key=lambda c: (-totals[c], c))
    signal = np.zeros(ctx.n)
    cat_rows = ctx.snapshot.arrays.category_rows.get(best.lower())
    if cat_rows is not None:
        signal[cat_rows] = 1.0
    return signal, best, totals[best] / mass


def _signals(ctx: ScoreContext) -> dict[str, np.ndarray]:
    """Every hybrid signal as a dense array."""
    index = ctx.snapshot.index
    return {
        "embed": semantic_evidence(ctx),
        "lexical": lexical_scores(ctx),
        "tag": lexical.field_coverage(index, ctx.query, "tags"),
        "name": lexical.field_coverage(index, ctx.query, "name"),
    }


def hybrid(ctx: ScoreContext) -> Scored:
    """Weighted fusion over the candidate pool, then seed 002's thresholds."""
    s = ctx.snapshot.settings
    signals = _signals(ctx)
    weights = {k: s.hybrid_weight(k) for k in ("embed", "lexical", "tag", "name")}
    notes = []
    if ctx.semantic is None:
        weights["embed"] = 0.0
        notes.append("No semantic scores were supplied; hybrid used lexical signals.")
    combined = sum(w * signals[k] for k, w in weights.items())
    cat_weight = s.hybrid_weight("category")
    total = sum(weights.values()) + cat_weight
    signals["category"], category, confidence = category_signal(ctx, combined)
    combined = combined + cat_weight * signals["category"]
    scores = np.where(candidate_mask(ctx), combined / total if total > 0 else 0.0, 0.0)
    out = Scored("hybrid", scores, signals, notes=notes)
    out.extras["category"] = (category, confidence)
    if ctx.semantic is not None:
        out.signals["cosine"] = semantic_raw(ctx)
    _thresholds(ctx, out)
    return out


def _thresholds(ctx: ScoreContext, out: Scored) -> None:
    """Mark tools under ``min_lexical_overlap`` / ``min_combined_score``."""
    s = ctx.snapshot.settings
    positive = out.scores > 0
    if s.min_lexical_overlap > 0:
        counts = lexical.overlap_count(ctx.snapshot.index, ctx.query)
        out.filtered["lexical_overlap"] = positive & (counts < s.min_lexical_overlap)
    if s.min_combined_score > 0:
        out.filtered["below_min_score"] = positive & (out.scores < s.min_combined_score)
