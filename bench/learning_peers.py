"""The same-history peers of bench/learning.py (issue 33's four), each tuned by
inner cross-validation on the training labels only.

* doc expansion: a x z(cosine) + (1 - a) x z(BM25 over the tool's text plus its
  labelled queries);
* centroid: the plain hybrid with each tool vector moved b towards the unit
  centroid of its labelled queries;
* nearest labelled request: z(plain hybrid) + g x z(best cosine to a labelled
  query of the tool);
* fused: all three fused with weights tuned on the labels,
  z(plain hybrid) + wd x z(expanded BM25) + wc x z(cosine to the labels'
  centroid) + wn x z(best cosine to a labelled query), the weights by
  coordinate ascent over ``FUSED_GRID`` on the inner folds' summed NDCG@10.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.quality import PlainBM25, Prepared, hybrid_text
from learning.fit import folds_of
from learning.metrics import ndcg_at_10, query_metrics

SEED = 20261126
INNER = 3
ALPHAS = (0.3, 0.5, 0.7, 0.9)
BETAS = (0.25, 0.5, 1.0, 2.0, 4.0)
GAMMAS = (0.25, 0.5, 1.0, 2.0, 4.0)
FUSED_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
FUSED_PARTS = ("expansion", "centroid", "nearest")
Matrix = np.ndarray
Parts = tuple[Matrix, ...]
Peer = tuple[Callable[[np.ndarray, np.ndarray], Parts], Callable[[Parts, Any], Matrix]]


def zrows(matrix: Matrix) -> Matrix:
    """Each row z-scored (0 where a row is constant)."""
    spread = matrix.std(axis=1, keepdims=True)
    centred = matrix - matrix.mean(axis=1, keepdims=True)
    return np.divide(centred, spread, out=np.zeros_like(centred), where=spread > 0)


def positive(matrix: Matrix) -> Matrix:
    """Shifted so every score is > 0 (rankers rank only positive scores)."""
    return matrix - matrix.min(axis=1, keepdims=True) + 1.0


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name
        self.description = ""


def bm25_matrix(texts: Sequence[str], queries: Sequence[str]) -> Matrix:
    index = PlainBM25([_Named(str(i)) for i in range(len(texts))], texts=texts)
    return np.stack([index.scores(q) for q in queries])


def ranked_names(scores: np.ndarray, names: Sequence[str], k: int = 10) -> list[str]:
    """Top ``k`` names by score (positive only), ties by catalog order."""
    rows = np.flatnonzero(scores > 0)
    rows = rows[np.lexsort((rows, -scores[rows]))][:k]
    return [names[int(r)] for r in rows]


def metrics_of(
    matrix: Matrix, rows: np.ndarray, data: Prepared
) -> list[dict[str, float]]:
    """Per-query metrics of a score matrix (rows = dev query indexes)."""
    names = [s.name for s in data.specs]
    return [
        query_metrics(ranked_names(matrix[j], names), data.queries[i].relevant)
        for j, i in enumerate(rows)
        if data.queries[i].relevant
    ]


def ndcg(matrix: Matrix, rows: np.ndarray, data: Prepared) -> float:
    return float(np.mean([m["NDCG@10"] for m in metrics_of(matrix, rows, data)]))


def tool_queries(data: Prepared, train: np.ndarray) -> list[list[int]]:
    """Per tool, the training queries labelled with it."""
    at = {s.name: i for i, s in enumerate(data.specs)}
    out: list[list[int]] = [[] for _ in data.specs]
    for i in train:
        for name in data.queries[i].relevant:
            if name in at:
                out[at[name]].append(int(i))
    return out


def expanded_bm25(data: Prepared, train: np.ndarray, test: np.ndarray) -> Matrix:
    """BM25 of the ``test`` queries over each tool's text plus its labelled queries."""
    per_tool = tool_queries(data, train)
    texts = [
        hybrid_text(s) + " " + " ".join(data.queries[i].text for i in per_tool[t])
        for t, s in enumerate(data.specs)
    ]
    return bm25_matrix(texts, [data.queries[i].text for i in test])


def centroids(data: Prepared, train: np.ndarray) -> Matrix:
    """Each tool's unit centroid of its labelled queries (0 for unlabelled tools)."""
    cents = np.zeros_like(data.hybrid_vecs)
    for t, qs in enumerate(tool_queries(data, train)):
        if qs:
            c = data.query_vecs[qs].mean(axis=0)
            cents[t] = c / max(float(np.linalg.norm(c)), 1e-12)
    return cents


def nearest_cosine(data: Prepared, train: np.ndarray, test: np.ndarray) -> Matrix:
    """Per test query and tool, the best cosine to a labelled query of the tool."""
    nearest = np.zeros((len(test), len(data.specs)))
    sims = data.query_vecs[test] @ data.query_vecs[train].T
    for t, qs in enumerate(tool_queries(data, train)):
        if qs:
            cols = np.searchsorted(train, qs)
            nearest[:, t] = sims[:, cols].max(axis=1)
    return nearest


def tune(
    labels_rows: np.ndarray, data: Prepared, peer: Peer, grid: Sequence[float]
) -> float:
    """The grid value with the best inner-CV NDCG@10 over ``labels_rows``."""
    build, combine = peer
    inner = folds_of(len(labels_rows), INNER, SEED + 1)
    totals = dict.fromkeys(grid, 0.0)
    for f in range(INNER):
        train, test = labels_rows[inner != f], labels_rows[inner == f]
        parts = build(train, test)
        for value in grid:
            totals[value] += ndcg(combine(parts, value), test, data) * len(test)
    return max(grid, key=lambda v: (totals[v], -grid.index(v)))


def doc_expansion(data: Prepared) -> Peer:
    """a x z(cosine) + (1 - a) x z(BM25 over the tool text + its labelled queries)."""
    cos = zrows(data.query_vecs @ data.hybrid_vecs.T)

    def build(train: np.ndarray, test: np.ndarray) -> Parts:
        return cos[test], zrows(expanded_bm25(data, train, test))

    def combine(parts: Parts, alpha: float) -> Matrix:
        return positive(alpha * parts[0] + (1 - alpha) * parts[1])

    return build, combine


def centroid(data: Prepared, rich: Matrix) -> Peer:
    """The plain hybrid with each tool vector moved b towards its labels' centroid."""

    def build(train: np.ndarray, test: np.ndarray) -> Parts:
        return data.query_vecs[test], centroids(data, train), zrows(rich[test])

    def combine(parts: Parts, beta: float) -> Matrix:
        queries, cents, lexical = parts
        vecs = data.hybrid_vecs + beta * cents
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        return positive(0.7 * zrows(queries @ vecs.T) + 0.3 * lexical)

    return build, combine


def nearest_labelled(data: Prepared, hyb: Matrix) -> Peer:
    """z(plain hybrid) + g x z(best cosine to a labelled query of the tool)."""

    def build(train: np.ndarray, test: np.ndarray) -> Parts:
        return zrows(hyb[test]), zrows(nearest_cosine(data, train, test))

    def combine(parts: Parts, gamma: float) -> Matrix:
        return positive(parts[0] + gamma * parts[1])

    return build, combine


def fused(data: Prepared, hyb: Matrix) -> Peer:
    """z(plain hybrid) + the three history signals, z-scored, with weights
    (expansion, centroid, nearest)."""

    def build(train: np.ndarray, test: np.ndarray) -> Parts:
        cents = centroids(data, train)
        return (
            zrows(hyb[test]),
            zrows(expanded_bm25(data, train, test)),
            zrows(data.query_vecs[test] @ cents.T),
            zrows(nearest_cosine(data, train, test)),
        )

    def combine(parts: Parts, weights: tuple[float, ...]) -> Matrix:
        out = parts[0].copy()
        for part, w in zip(parts[1:], weights, strict=True):
            if w:
                out += w * part
        return positive(out)

    return build, combine


def relevance(data: Prepared, rows: np.ndarray) -> np.ndarray:
    at = {s.name: i for i, s in enumerate(data.specs)}
    rel = np.zeros((len(rows), len(data.specs)), dtype=bool)
    for j, i in enumerate(rows):
        rel[j, [at[t] for t in data.queries[i].relevant if t in at]] = True
    return rel


def tune_fused(
    labels_rows: np.ndarray, data: Prepared, peer: Peer
) -> tuple[float, ...]:
    """The fused peer's weights: coordinate ascent (two passes) over
    ``FUSED_GRID`` per weight, on the summed NDCG@10 of the inner folds (each
    fold's signals built from the other inner folds)."""
    build, combine = peer
    inner = folds_of(len(labels_rows), INNER, SEED + 1)
    built = []
    for f in range(INNER):
        train, test = labels_rows[inner != f], labels_rows[inner == f]
        built.append((build(train, test), relevance(data, test)))

    def score(weights: tuple[float, ...]) -> float:
        return sum(float(ndcg_at_10(combine(p, weights), r).sum()) for p, r in built)

    weights = (0.0,) * len(FUSED_PARTS)
    best = score(weights)
    for _ in range(2):
        moved = False
        for n in range(len(weights)):
            for value in FUSED_GRID:
                trial = weights[:n] + (value,) + weights[n + 1 :]
                found = score(trial)
                if found > best + 1e-9:
                    best, weights, moved = found, trial, True
        if not moved:
            break
    return weights
