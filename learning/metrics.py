"""The ranking metrics, exactly as shared/bench/README.md defines them: the one
definition that Quiver's evaluations and the benchmarks (bench/quality.py) use.

For one request with relevant tools ``rel`` and a ranking ``ranked`` (best first):
``R@k`` = |rel ∩ ranked[:k]| / |rel|; ``NDCG@10`` = Σ over i < 10 with ranked[i] in
rel of 1/log2(i+2) over Σ over i < min(|rel|, 10) of 1/log2(i+2); ``MRR`` = 1/(1 +
the index of the first relevant tool), 0 when none. Means are over requests with
a non-empty ``rel``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

KS = (1, 3, 5, 10)


def query_metrics(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    """R@1/3/5/10, NDCG@10 and reciprocal rank of one ranking (``relevant`` not
    empty)."""
    rel = set(relevant)
    if not rel:
        raise ValueError("relevant: must name at least one tool")
    out = {f"R@{k}": len(rel & set(ranked[:k])) / len(rel) for k in KS}
    dcg = sum(1 / math.log2(i + 2) for i, n in enumerate(ranked[:10]) if n in rel)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), 10)))
    out["NDCG@10"] = dcg / ideal
    ranks = [i for i, n in enumerate(ranked) if n in rel]
    out["MRR"] = 1 / (ranks[0] + 1) if ranks else 0.0
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """The mean of each per-request metric ({} for no rows)."""
    if not rows:
        return {}
    return {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}


def ndcg_at_10(scores: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """NDCG@10 per row of a (requests x tools) score matrix, ``rel`` marking the
    expected tools: the definition above, vectorised (zero scores never rank)."""
    k = min(10, scores.shape[1])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    top = np.take_along_axis(top, order, axis=1)
    hits = np.take_along_axis(rel, top, axis=1) & (
        np.take_along_axis(scores, top, axis=1) > 0
    )
    discount = 1.0 / np.log2(np.arange(k) + 2)
    dcg = (hits * discount).sum(axis=1)
    ideal = np.cumsum(discount)[np.minimum(rel.sum(axis=1), k) - 1]
    return np.asarray(dcg / ideal)
