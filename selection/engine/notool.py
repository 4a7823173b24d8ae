"""The learnt "no tool fits" decision: a small logistic model over what the
ranking and the catalog's labelled requests say about a request.

Fitted by learning.notool on held-out folds and stored in the learnt model's
params; the engine asks ``decide`` once per request, after scoring, only when the
catalog has a decision and the request a ``min_score`` and a passing tool.
Pure numpy.
The rules: docs/explanation/learning.md, What a request pays for what was learnt.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

FEATURES = ("top", "margin", "no_tool_sim", "tool_sim", "vote")


def score_features(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``top`` and ``margin`` per row of a (requests x tools) score matrix."""
    if scores.shape[1] < 2:
        top = scores.max(axis=1, initial=0.0)
        return top, top
    two = -np.partition(-scores, 1, axis=1)[:, :2]
    return two[:, 0], two[:, 0] - two[:, 1]


def similarity_features(sims: np.ndarray, none: np.ndarray, k: int) -> np.ndarray:
    """``no_tool_sim``, ``tool_sim`` and ``vote`` per row of a (requests x
    labelled requests) cosine matrix; ``none`` marks the "no tool fits" labels."""
    m = sims.shape[0]
    out = np.zeros((m, 3))
    if sims.shape[1] == 0:
        return out
    if none.any():  # clipped at 0, as the knn signal's cosines are
        out[:, 0] = np.maximum(sims[:, none].max(axis=1), 0.0)
    if (~none).any():
        out[:, 1] = np.maximum(sims[:, ~none].max(axis=1), 0.0)
    kk = min(k, sims.shape[1])
    top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
    out[:, 2] = none[top].mean(axis=1)
    return out


def stack(top: np.ndarray, margin: np.ndarray, similar: np.ndarray) -> np.ndarray:
    """The feature matrix in ``FEATURES`` order."""
    return np.column_stack([top, margin, similar])


def _logit(decision: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    """The decision's logit for each row of its own features (clipped to the
    range it was fitted on)."""
    low = np.asarray(decision.get("low", [-np.inf] * x.shape[1]), dtype=np.float64)
    high = np.asarray(decision.get("high", [np.inf] * x.shape[1]), dtype=np.float64)
    mean = np.asarray(decision["mean"], dtype=np.float64)
    scale = np.asarray(decision["scale"], dtype=np.float64)
    coef = np.asarray(decision["coef"], dtype=np.float64)
    z = (np.clip(x, low, high) - mean) / scale
    return np.asarray(z @ coef + float(decision["intercept"]))


def probability(decision: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    """P(no tool fits) for each row of a feature matrix (all ``FEATURES``; the
    decision uses the ones it names)."""
    x = np.atleast_2d(x)[:, [FEATURES.index(f) for f in decision["features"]]]
    z = _logit(decision, x)
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -50, 50))))


def decide(
    decision: Mapping[str, Any],
    examples: np.ndarray,
    none: np.ndarray,
    vector: np.ndarray | None,
    scores: np.ndarray,
    tool_sim: float | None = None,
) -> dict[str, Any] | None:
    """The "no tool fits" answer for one request, or None when a tool fits.

    ``scores``: the fused scores of the candidates; ``examples`` the labelled
    requests' unit vectors (rows), ``none`` which of them named no tool;
    ``tool_sim``: the cosine of the nearest labelled tool request when the
    caller knows it (the ``knn`` signal's best), so only the no-tool labels are
    compared. Without a comparable vector the decision is not taken."""
    if (
        vector is None
        or examples.ndim != 2
        or not len(examples)
        or examples.shape[1] != np.shape(vector)[-1]
        or not len(scores)
    ):
        return None
    top, margin = score_features(np.asarray(scores, dtype=np.float64)[None, :])
    query = np.asarray(vector, dtype=np.float32)
    if "vote" in decision["features"] or tool_sim is None:
        sims = np.einsum("ij,j->i", examples, query)
        similar = similarity_features(sims[None, :], none, int(decision["k"]))
    else:
        near = np.einsum("ij,j->i", examples[none], query)
        similar = np.array([[float(near.max(initial=0.0)), tool_sim, 0.0]])
    x = stack(top, margin, similar)
    p = float(probability(decision, x)[0])
    cut = float(decision["cut"])
    if p < cut or math.isnan(p):
        return None
    return {
        "reason": "learnt_no_tool",
        "best_score": round(float(top[0]), 4),
        "threshold": round(cut, 4),
        "probability": round(p, 4),
        "nearest_no_tool": round(float(similar[0, 0]), 4),
        "nearest_tool": round(float(similar[0, 1]), 4),
    }
