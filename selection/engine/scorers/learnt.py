"""The learnt signal on top of any scorer: the catalog's labelled requests.

When the snapshot carries an applied learnt model (selection.engine.learnt), its
signals are mapped onto the snapshot's rows and fused into the scorer's scores
with the model's weights; tools only the labels point at become candidates.
``learnt`` (the weighted share of the fused score that came from the labels) is
kept as a signal so a pick's reason and a why-not can name it.
"""

from __future__ import annotations

import numpy as np

from selection.engine.learnt import SIGNALS, fuse
from selection.engine.scorers.base import ScoreContext, Scored
from selection.engine.scorers.hybrid import category_signal


def apply_learnt(ctx: ScoreContext, scored: Scored) -> Scored:
    """``scored`` with the learnt signal fused in (unchanged without one)."""
    signal = ctx.snapshot.learnt
    if signal is None or not any(signal.weights.get(s, 0) > 0 for s in SIGNALS):
        return scored
    found = signal.scores(ctx.vector, ctx.query.terms, signal.active)
    rows = ctx.snapshot.learnt_rows
    here = rows >= 0
    dense = {}
    for name in SIGNALS:
        dense[name] = np.zeros(ctx.n)
        dense[name][rows[here]] = found[name][here]
    fused = fuse(scored.scores, dense, signal.weights)
    base = scored.scores / (1.0 + sum(signal.weights.get(s, 0.0) for s in SIGNALS))
    scored.scores = np.where(ctx.allowed, fused, 0.0)
    scored.signals["learnt"] = np.where(ctx.allowed, fused - base, 0.0)
    for name in SIGNALS:
        if signal.weights.get(name, 0) > 0:
            scored.signals[f"learnt_{name}"] = dense[name]
    scored.extras["learnt_model"] = signal.model_id
    if "category" in scored.extras:  # the category the fused ranking points at
        _, category, share = category_signal(ctx, scored.scores)
        scored.extras["category"] = (category, share)
    return scored
