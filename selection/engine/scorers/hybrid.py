"""Seed 002's combined score: semantic similarity fused with lexical signals.

Each candidate (the semantic pool plus every tool with lexical evidence) gets a
weighted mean of its signals, times the pool's semantic confidence, so a request
no tool fits scores low everywhere but keeps its ranking. Without semantic scores
(or a vector still pending) the ``embed`` weight drops out: a tool is searchable by
its words the moment it is written.
The rules: docs/explanation/selection.md, The hybrid.
"""

from __future__ import annotations

import numpy as np

from selection.engine.diversity import diversified, several_sentences
from selection.engine.fusion import describe, hybrid_weights, pulled
from selection.engine.scorers import lexical
from selection.engine.scorers.base import ScoreContext, Scored
from selection.engine.scorers.simple import (
    lexical_scores,
    pool_rows,
    semantic_confidence,
    semantic_raw,
)

# What a hub's cosine loses per unit of mean cosine past the catalog's line
# (selection.engine.vectors.HUB_LINE).
HUB_WEIGHT = 2.0


def top_rows(scores: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Rows of the ``k`` best positive scores within ``mask`` (any order)."""
    rows = np.flatnonzero(mask & (scores > 0))
    if len(rows) > k:
        rows = rows[np.argpartition(-scores[rows], k - 1)[:k]]
    return rows


def candidate_mask(ctx: ScoreContext) -> np.ndarray:
    """The semantic pool plus every allowed tool with lexical evidence.

    Lexical evidence is cheap to compute for every tool (postings), so no exact
    name match is lost because it fell outside the embedding pool.
    """
    mask = ctx.allowed & (lexical_scores(ctx) > 0)
    located = pool_rows(ctx)
    if located is not None:
        mask[located.rows] = True
    elif ctx.semantic is not None:
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


def relative_lexical(ctx: ScoreContext, candidates: np.ndarray) -> np.ndarray:
    """BM25F coverage relative to the best candidate's, floored at ``lexical_floor``.

    Coverage alone under-rates tools for long, multi-part requests (each tool
    answers one part), so the best lexical match is scaled to 1 -- unless even
    the best covers less than ``lexical_floor`` of the query, in which case the
    floor is the yardstick and a query without lexical evidence keeps low scores.
    """
    raw = lexical_scores(ctx)
    best = float(raw[candidates].max(initial=0.0))
    return np.minimum(raw / max(best, ctx.snapshot.settings.lexical_floor), 1.0)


def lexical_confidence(ctx: ScoreContext) -> np.ndarray:
    """Per tool: how much of the query's IDF mass the tool itself covers, rescaled
    between ``lexical_confidence_floor`` (0) and ``..._ceiling`` (1).

    The pool's semantic confidence speaks for the request as a whole; a tool that
    covers most of the query's rare words is evidence on its own, e.g. a tool
    added a moment ago whose embedding is still pending or failed."""
    s = ctx.snapshot.settings
    span = max(s.lexical_confidence_ceiling - s.lexical_confidence_floor, 1e-6)
    raw = lexical_scores(ctx)
    return np.clip((raw - s.lexical_confidence_floor) / span, 0.0, 1.0)


def hub_penalty(ctx: ScoreContext) -> np.ndarray:
    """What each pooled tool's cosine loses for sitting near every tool of the
    catalog (``VectorTable.hub_excess``); zeros where the snapshot does not hold
    the vectors (catalogs above ``QUIVER_INPROCESS_VECTORS_MAX`` tools)."""
    if "hub_penalty" not in ctx.cache:
        table = ctx.snapshot.vectors
        if ctx.semantic is None or table is None or len(table.present) != ctx.n:
            penalty = np.zeros(ctx.n)
        else:
            raw = semantic_raw(ctx)
            penalty = np.where(raw != 0, HUB_WEIGHT * table.hub_excess, 0.0)
        ctx.cache["hub_penalty"] = penalty
    cached: np.ndarray = ctx.cache["hub_penalty"]
    return cached


def pool_cosine(ctx: ScoreContext) -> np.ndarray:
    """Cosine in 0..1 per tool, less its ``hub_penalty``; tools outside the pool
    get the pool's lowest.

    The pool holds the nearest tools, so a tool outside it is at most as similar
    as the pool's last member: using that bound (rather than 0) keeps a strong
    lexical match from being sunk just because the pool was small.
    """
    raw = semantic_raw(ctx) - hub_penalty(ctx)
    if not ctx.semantic:
        return raw
    located = pool_rows(ctx)
    if located is not None:
        floor = max(0.0, float(located.scores.min()))
    else:
        floor = max(0.0, min(float(v) for v in ctx.semantic.values()))
    return np.clip(np.maximum(raw, floor), 0.0, 1.0)


def _signals(ctx: ScoreContext, candidates: np.ndarray) -> dict[str, np.ndarray]:
    """Every hybrid signal as a dense array."""
    index = ctx.snapshot.index
    return {
        "embed": pool_cosine(ctx),
        "lexical": lexical.keyword(index, ctx.query),
        "bm25f": relative_lexical(ctx, candidates),
        "tag": lexical.field_coverage(index, ctx.query, "tags"),
        "name": lexical.field_coverage(index, ctx.query, "name"),
    }


def hybrid(ctx: ScoreContext) -> Scored:
    """Weighted fusion over the candidate pool, then seed 002's thresholds."""
    s, fusion = ctx.snapshot.settings, ctx.snapshot.fusion
    candidates = candidate_mask(ctx)
    signals = _signals(ctx, candidates)
    terms = len(ctx.query.terms)
    weights = hybrid_weights(s, fusion, terms)
    notes, confidence = [], 1.0
    if ctx.semantic is None:
        weights["embed"] = 0.0
        notes.append("No semantic scores were supplied; hybrid used lexical signals.")
    else:
        confidence = semantic_confidence(ctx)
    combined = np.zeros(ctx.n)
    for key, weight in weights.items():
        combined += weight * signals[key]
    cat_weight = s.hybrid_weight("category")
    total = np.full(ctx.n, sum(weights.values()) + cat_weight)
    missing = _without_vector(ctx)
    combined[missing] -= weights["embed"] * signals["embed"][missing]
    total[missing] -= weights["embed"]
    signals["category"], category, share = category_signal(ctx, combined)
    combined += cat_weight * signals["category"]
    fused = np.divide(combined, total, out=np.zeros(ctx.n), where=total > 0)
    pull = pulled(fused, candidates & ctx.allowed, fusion, s.family_pull)
    if pull.any():
        fused += pull
        signals["family"] = pull
    factor = np.maximum(confidence, lexical_confidence(ctx))
    factor[missing] = 1.0
    scores = np.where(candidates, fused * factor, 0.0)
    moved = _diversified(ctx, scores, candidates)
    if moved is not None:
        signals["diversity"] = moved - scores
        scores = moved
    out = Scored("hybrid", scores, signals)
    out.notes, out.extras["category"] = notes, (category, share)
    out.extras["fusion"] = describe(s, fusion, terms, moved is not None)
    out.signals["confidence"] = np.where(missing, 1.0, confidence)
    if ctx.semantic is not None:
        out.signals["cosine"] = semantic_raw(ctx)
        hub = hub_penalty(ctx)
        if hub.any():
            out.signals["hub"] = -hub
    _thresholds(ctx, out)
    return out


def _diversified(
    ctx: ScoreContext, scores: np.ndarray, candidates: np.ndarray
) -> np.ndarray | None:
    """The scores re-ordered for a request of several sentences (None: as is)."""
    weight = ctx.snapshot.settings.diversity
    if weight <= 0 or not several_sentences(ctx.query.embed_text):
        return None
    vectors = ctx.snapshot.vectors
    return diversified(scores, candidates & ctx.allowed, vectors, weight)


def _without_vector(ctx: ScoreContext) -> np.ndarray:
    """Rows whose vector is not there yet (just imported or edited: embedding
    pending). Their similarity is unknown, not low, so they are scored as in a
    catalog without semantic scores: no ``embed`` weight (the rest renormalised)
    and confidence 1; the pool's semantic confidence speaks only for the tools it
    could see. Known where the snapshot holds the vectors (catalogs up to
    ``QUIVER_INPROCESS_VECTORS_MAX`` tools); none elsewhere."""
    table = ctx.snapshot.vectors
    if ctx.semantic is None or table is None or len(table.present) != ctx.n:
        return np.zeros(ctx.n, dtype=bool)
    missing: np.ndarray = ~table.present
    return missing


def _thresholds(ctx: ScoreContext, out: Scored) -> None:
    """Mark tools under ``min_lexical_overlap`` / ``min_combined_score``."""
    s = ctx.snapshot.settings
    positive = out.scores > 0
    if s.min_lexical_overlap > 0:
        counts = lexical.overlap_count(ctx.snapshot.index, ctx.query)
        out.filtered["lexical_overlap"] = positive & (counts < s.min_lexical_overlap)
    if s.min_combined_score > 0:
        out.filtered["below_min_score"] = positive & (out.scores < s.min_combined_score)
