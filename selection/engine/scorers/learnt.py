"""The learnt signal on top of any scorer: the catalog's labelled requests.

When the snapshot carries an applied learnt model (selection.engine.learnt), its
signals are mapped onto the snapshot's rows and fused into the scorer's scores
with the model's weights; tools only the labels point at become candidates.
``learnt`` (the weighted share of the fused score that came from the labels) is
kept as a signal so a pick's reason and a why-not can name it.
"""

from __future__ import annotations

import numpy as np

from selection.engine.learnt import fuse
from selection.engine.scorers.base import ScoreContext, Scored
from selection.engine.scorers.hybrid import category_signal


def apply_learnt(ctx: ScoreContext, scored: Scored) -> Scored:
    """``scored`` with the learnt signal fused in (unchanged without one)."""
    signal = ctx.snapshot.learnt
    active = signal.active if signal is not None else ()
    if signal is None or not active:
        return scored
    dense = signal.request_scores(ctx.vector, ctx.query.terms)
    mapping = ctx.snapshot.learnt_map  # None: the signal's rows are the snapshot's
    if mapping is not None:
        rows, source = mapping
        for name in active:
            moved = np.zeros(ctx.n)
            moved[rows] = dense[name][source]
            dense[name] = moved
    weights = {name: signal.weights[name] for name in active}
    fused = fuse(scored.scores, dense, weights)
    gained = fused - scored.scores / (1.0 + sum(weights.values()))
    # Scores and signals are >= 0: times the mask is np.where(allowed, x, 0).
    np.multiply(fused, ctx.allowed, out=fused)
    np.multiply(gained, ctx.allowed, out=gained)
    scored.scores = fused
    scored.signals["learnt"] = gained
    for name in active:
        scored.signals[f"learnt_{name}"] = dense[name]
    scored.extras["learnt_model"] = signal.model_id
    if "category" in scored.extras:  # the category the fused ranking points at
        _, category, share = category_signal(ctx, scored.scores)
        scored.extras["category"] = (category, share)
    return scored
