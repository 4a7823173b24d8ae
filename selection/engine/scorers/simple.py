"""The single-signal scorers: keyword (seed 000), BM25F (seed 004), embedding."""

from __future__ import annotations

import numpy as np

from selection.engine.scorers import lexical
from selection.engine.scorers.base import ScoreContext, Scored
from selection.engine.sentences import PoolRows, SentencePool


def keyword(ctx: ScoreContext) -> Scored:
    """Share of the query's words found in the tool's name, description and tags."""
    index = ctx.snapshot.index
    scores = lexical.keyword(index, ctx.query)
    return Scored("keyword", scores, {"keyword": scores})


def lexical_scores(ctx: ScoreContext) -> np.ndarray:
    """BM25F coverage for this request, computed once and shared by scorers."""
    if "bm25f" not in ctx.cache:
        ctx.cache["bm25f"] = lexical.bm25f(ctx.snapshot.index, ctx.query)
    scores: np.ndarray = ctx.cache["bm25f"]
    return scores


def bm25f(ctx: ScoreContext) -> Scored:
    """Field-weighted BM25 as the share of the query's IDF mass a tool covers."""
    scores = lexical_scores(ctx)
    return Scored("bm25f", scores, {"bm25f": scores})


# The lowest query-level confidence: above 0 so that every candidate keeps a
# positive score (the ranking at min_score 0 and its explanations stay whole),
# and far under the default min_score (0.05) so that a request no tool fits
# still gets an empty answer (scores are at most 1 x this factor).
MIN_SEMANTIC_CONFIDENCE = 0.01


def pool_rows(ctx: ScoreContext) -> PoolRows | None:
    """The semantic pool as rows and scores of this snapshot, when the pool knows
    them (``CatalogSnapshot.named_pool``); None: read it by name."""
    located = getattr(ctx.semantic, "located", None)
    if located is None or located.tools is not ctx.snapshot.tools:
        return None
    found: PoolRows = located
    return found


def semantic_raw(ctx: ScoreContext) -> np.ndarray:
    """Cosine per tool from the caller's semantic pool (0 outside the pool)."""
    if "semantic_raw" not in ctx.cache:
        raw = np.zeros(ctx.n, dtype=np.float64)
        located = pool_rows(ctx)
        if located is not None:
            raw[located.rows] = located.scores
        for name, cos in (ctx.semantic or {}).items() if located is None else ():
            row = ctx.snapshot.by_name.get(name)
            if row is not None:
                raw[row] = float(cos)
        ctx.cache["semantic_raw"] = raw
    cached: np.ndarray = ctx.cache["semantic_raw"]
    return cached


def semantic_confidence(ctx: ScoreContext) -> float:
    """How sure the caller's pool is that *some* tool fits the request.

    The best cosine in the pool, rescaled so the model's "unrelated" level
    (``semantic_floor``) maps to ``MIN_SEMANTIC_CONFIDENCE`` and a clear match
    (``semantic_ceiling``) to 1. Raw cosines of sentence embeddings rarely fall
    below ~0.1 even for unrelated texts, so without this query-level factor every
    request would look relevant and ``min_score`` could never return an empty
    answer. Ranking inside one request is unaffected (every tool is scaled by the
    same factor), also under the floor: the factor never reaches 0, so a request
    with ``min_score`` 0 still gets its full ranking.

    The best cosine beat every other query-level signal tried on MetaTool's
    no-tool queries (margins over the pool's mean / k-th cosine, z-scores against
    the pool or the whole catalog, distance to the catalog centroid, lexical
    coverage): subtracting a background lowers recall in dense catalogs more than
    it removes false positives.
    """
    s = ctx.snapshot.settings
    best = float(semantic_raw(ctx).max(initial=0.0))
    if isinstance(ctx.semantic, SentencePool):  # the whole request's, not a sentence's
        best = max(ctx.semantic.request_best, 0.0)
    span = max(s.semantic_ceiling - s.semantic_floor, 1e-6)
    rescaled = (best - s.semantic_floor) / span
    return float(np.clip(rescaled, MIN_SEMANTIC_CONFIDENCE, 1.0))


def embedding(ctx: ScoreContext) -> Scored:
    """Semantic similarity only; falls back to BM25F without semantic scores."""
    if ctx.semantic is None:
        out = bm25f(ctx)
        out.fallback_reason = "no_semantic_scores"
        out.notes.append("No semantic scores were supplied; ranked by BM25F.")
        return out
    cosine = np.clip(semantic_raw(ctx), 0.0, 1.0)
    confidence = semantic_confidence(ctx)
    out = Scored("embedding", cosine * confidence, {"cosine": semantic_raw(ctx)})
    out.signals["confidence"] = np.full(ctx.n, confidence)
    return out
