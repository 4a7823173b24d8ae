"""In-process semantic search: the catalog's tool vectors as one matrix.

For catalogs small enough to hold in memory, one matrix-vector product and an
argpartition give the exact cosine top-k, with no database round trip; the app
falls back to pgvector HNSW above a size threshold. Pure numpy, no Django.

A hub is a tool whose vector sits near every other tool's (``hub_excess``): it
lands in the semantic pool of any request, whatever the request asks. Measured in
bench/README.md ("Session 17: designs that take away what long or request-like
text buys").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from selection.engine.sentences import pooled

# A tool's mean cosine to the catalog's other tools counts against it only past
# this percentile of the catalog's.
HUB_LINE = 99.0


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Float32 rows scaled to unit length (zero rows stay zero)."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


@dataclass(frozen=True, eq=False)
class VectorTable:
    """One model's vectors, row-aligned with the snapshot's tools.

    ``present[r]`` is False for a tool without a vector yet (pending): it gets no
    semantic evidence, as with pgvector."""

    model_id: str
    matrix: np.ndarray
    present: np.ndarray

    @staticmethod
    def build(
        model_id: str, dimension: int, rows: int, found: Mapping[int, ArrayLike]
    ) -> VectorTable:
        """A table from row -> vector (any row not in ``found`` has none)."""
        matrix = np.zeros((rows, dimension), dtype=np.float32)
        present = np.zeros(rows, dtype=bool)
        if found:
            index = np.fromiter(found.keys(), dtype=np.int64, count=len(found))
            matrix[index] = unit_rows(np.stack([np.asarray(v) for v in found.values()]))
            present[index] = True
        return VectorTable(model_id, matrix, present)

    @cached_property
    def hub_excess(self) -> np.ndarray:
        """Per row: how far its mean cosine to the other rows with a vector passes
        the ``HUB_LINE`` percentile of the table's (0 under it or without one).

        With unit rows and S the sum of all rows, a row v's mean cosine to the
        others is (v . S - v . v) / (n - 1): one product over the table."""
        out = np.zeros(len(self.present), dtype=np.float64)
        count = int(np.count_nonzero(self.present))
        if count < 2:
            return out
        rows = self.matrix[self.present].astype(np.float64)
        own = np.einsum("ij,ij->i", rows, rows)
        mean = (np.einsum("ij,j->i", rows, rows.sum(axis=0)) - own) / (count - 1)
        out[self.present] = np.maximum(mean - np.percentile(mean, HUB_LINE), 0.0)
        return out

    def nearest(self, query: np.ndarray, k: int) -> dict[int, float]:
        """Row -> cosine similarity of the ``k`` rows nearest to ``query``, exact."""
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0 or k <= 0 or not self.present.any():
            return {}
        # einsum, not ``@``: BLAS's threads wait for a busy core's turn, and this
        # single-threaded loop does not (bench/README.md).
        scores = np.einsum("ij,j->i", self.matrix, q / norm)
        scores[~self.present] = -np.inf
        k = min(k, int(np.count_nonzero(self.present)))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]
        return {int(r): float(scores[r]) for r in top}

    def cosines(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every row to ``query`` (0 for rows without a vector)."""
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return np.zeros(len(self.present), dtype=np.float32)
        return np.einsum("ij,j->i", self.matrix, q / norm)

    def nearest_mixed(
        self, query: np.ndarray, sentences: np.ndarray, k: int
    ) -> dict[int, float]:
        """Row -> sentence-mixed semantic score (selection.engine.sentences) over
        the union of the request's and each sentence's ``k`` nearest rows."""
        if len(sentences) == 0:
            return self.nearest(query, k)
        if k <= 0 or not self.present.any():
            return {}
        per_sentence = np.stack([self.cosines(s) for s in sentences])
        return pooled(self.cosines(query), per_sentence, k, self.present)

    def patched(
        self, keep: np.ndarray, replaced: Mapping[int, np.ndarray | None], added: int
    ) -> VectorTable:
        """The table after dropping rows (``keep`` mask over the old rows),
        replacing vectors of kept rows (new row numbering) and appending rows."""
        matrix = np.concatenate(
            [self.matrix[keep], np.zeros((added, self.matrix.shape[1]), np.float32)]
        )
        present = np.concatenate([self.present[keep], np.zeros(added, dtype=bool)])
        gone = [row for row, vector in replaced.items() if vector is None]
        matrix[gone] = 0.0
        present[gone] = False
        rows = [row for row, vector in replaced.items() if vector is not None]
        if rows:
            matrix[rows] = unit_rows(np.stack([np.asarray(replaced[r]) for r in rows]))
            present[rows] = True
        return VectorTable(self.model_id, matrix, present)
