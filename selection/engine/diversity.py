"""A request of several sentences asks for several things: its top tools are
re-ordered so that near-duplicates of a tool already ranked do not crowd out the
tools for its other parts (maximal marginal relevance over the tools' own vectors).
The candidates keep their scores as a set, so thresholds read the same numbers.
Pure: no Django.
The rules: docs/explanation/selection.md, Diversity.
"""

from __future__ import annotations

import numpy as np

from selection.engine.sentences import split_sentences
from selection.engine.vectors import VectorTable

DEPTH = 30


def several_sentences(text: str) -> bool:
    """Whether the request's embedded text has the sentences the app embeds
    one by one (selection.engine.sentences)."""
    return bool(split_sentences(text))


def diversified(
    scores: np.ndarray, mask: np.ndarray, vectors: VectorTable | None, weight: float
) -> np.ndarray | None:
    """``scores`` with its ``DEPTH`` best ``mask`` rows re-ordered (None: nothing
    to do: no weight, no vectors, or too few candidates)."""
    if weight <= 0 or vectors is None or len(vectors.present) != len(scores):
        return None
    rows = np.flatnonzero(mask & (scores > 0) & vectors.present)
    if len(rows) > DEPTH:
        rows = rows[np.argpartition(-scores[rows], DEPTH - 1)[:DEPTH]]
    rows = rows[np.lexsort((rows, -scores[rows]))]
    values = scores[rows]
    span = float(values[0] - values[-1]) if len(rows) > 2 else 0.0
    if span <= 0:
        return None
    order = _greedy((values - values[-1]) / span, vectors.matrix[rows], weight)
    out = scores.copy()
    out[rows[order]] = values
    return out


def _greedy(value: np.ndarray, vecs: np.ndarray, weight: float) -> list[int]:
    """Positions in pick order (maximal marginal relevance)."""
    similar = vecs @ vecs.T
    worth = (1 - weight) * value  # -inf once picked
    penalty = np.zeros(len(value))  # highest cosine to a picked tool (0: none yet)
    order: list[int] = []
    for _ in range(len(value)):
        pick = int(np.argmax(worth - weight * penalty))
        worth[pick] = -np.inf
        near = similar[pick].astype(np.float64)
        penalty = np.maximum(penalty, near) if order else near
        order.append(pick)
    return order
