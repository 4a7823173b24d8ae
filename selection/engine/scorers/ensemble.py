"""Seed 004's ensemble: relevance plus conversation context, anchors and penalties.

The hybrid's relevance is averaged with focus, transition and recency signals,
an ``avoid_when`` penalty is taken off and micro-anchors pull named tools up.
Context signals with nothing to say drop out of the average, so a first-turn query
scores exactly like its relevance.
The rules: docs/explanation/selection.md, The ensemble.
"""

from __future__ import annotations

import math

import numpy as np

from selection.engine.scorers.base import ScoreContext, Scored
from selection.engine.scorers.hybrid import hybrid
from selection.engine.scorers.simple import bm25f
from selection.engine.settings import compile_anchor

STICKY_DECAY = (1.0, 0.7, 0.4, 0.2, 0.1)


def _focus(ctx: ScoreContext, relevant: np.ndarray) -> np.ndarray | None:
    """Category / tag continuity with the last tool used, or None without one."""
    last = ctx.query.last_tool
    row = ctx.snapshot.by_name.get(last) if last else None
    if row is None:
        return None
    tool = ctx.snapshot.tools[row]
    focus = np.zeros(ctx.n)
    tags = ctx.snapshot.index.fields["tags"]
    for tag_term in {ctx.snapshot.index.vocab.get(t) for t in _tag_terms(tool.tags)}:
        if tag_term is not None:
            focus[tags.rows(tag_term)[0]] = 0.5
    same = ctx.snapshot.arrays.category_rows.get(tool.category.lower())
    if tool.category and same is not None:
        focus[same] = 1.0
    return np.where(relevant, focus, 0.0)


def _tag_terms(tags: tuple[str, ...]) -> set[str]:
    """The stemmed words of a tool's tags."""
    from selection.engine.text import tokenize

    return {t for tag in tags for t in tokenize(tag)}


def _transition(ctx: ScoreContext) -> np.ndarray | None:
    """The curator's transition probabilities out of the last tool, if any."""
    last = ctx.query.last_tool
    row_map = ctx.snapshot.settings.transitions.get(last or "")
    if not row_map:
        return None
    out = np.zeros(ctx.n)
    for name, p in row_map.items():
        row = ctx.snapshot.by_name.get(name)
        if row is not None:
            out[row] = p
    return out


def _sticky(ctx: ScoreContext) -> np.ndarray | None:
    """Recency boost for the tools used last, or None without history."""
    rows = [
        (i, ctx.snapshot.by_name[name])
        for i, name in enumerate(ctx.query.recent_tools[: len(STICKY_DECAY)])
        if name in ctx.snapshot.by_name
    ]
    if not rows:
        return None
    out = np.zeros(ctx.n)
    for i, row in rows:
        out[row] = max(out[row], STICKY_DECAY[i])
    return out


def _avoid(ctx: ScoreContext) -> np.ndarray:
    """Query weight of words found in ``avoid_when`` but not in positive fields."""
    index = ctx.snapshot.index
    avoid, positive = index.fields["avoid_when"], index.fields["overlap"]
    out = np.zeros(ctx.n)
    for term, weight in index.term_ids(ctx.query.terms):
        if term is None:
            continue
        docs, _ = avoid.rows(term)
        if len(docs):
            docs = docs[~np.isin(docs, positive.rows(term)[0])]
            out[docs] += weight
    return np.minimum(out, 1.0)


def _anchors(ctx: ScoreContext) -> np.ndarray:
    """Summed boosts of the micro-anchors whose pattern matches the query."""
    out = np.zeros(ctx.n)
    text = ctx.query.text
    for anchor in ctx.snapshot.settings.micro_anchors:
        if compile_anchor(anchor).search(text):
            for row in ctx.snapshot.rows(list(anchor.tools)):
                out[row] += anchor.boost
    return out


def ensemble(ctx: ScoreContext) -> Scored:
    """Relevance plus the available context signals (see the module docstring)."""
    s = ctx.snapshot.settings
    rel = hybrid(ctx) if ctx.semantic is not None else bm25f(ctx)
    relevance = rel.scores
    parts = {"focus": _focus(ctx, relevance > 0), "transition": _transition(ctx)}
    parts["sticky"] = _sticky(ctx)
    total = s.ensemble_weight("bm25f")
    base = total * relevance
    signals = {"relevance": relevance}
    for name, values in parts.items():
        if values is not None:
            base = base + s.ensemble_weight(name) * values
            total += s.ensemble_weight(name)
            signals[name] = values
    base = base / total if total > 0 else base
    signals["avoid"] = _avoid(ctx)
    signals["anchor"] = _anchors(ctx)
    scores = np.clip(base - s.ensemble_weight("avoid") * signals["avoid"], 0.0, 1.0)
    scores = 1.0 - (1.0 - scores) * np.exp(-signals["anchor"])
    signals.update({k: v for k, v in rel.signals.items() if k not in signals})
    out = Scored("ensemble", scores, signals, notes=rel.notes, extras=rel.extras)
    out.filtered = rel.filtered
    out.extras["context"] = {k: v is not None for k, v in parts.items()}
    return out


def anchor_score(score: float, boost: float) -> float:
    """The anchored score of one tool (exposed for explanations and tests)."""
    return 1.0 - (1.0 - score) * math.exp(-boost)
