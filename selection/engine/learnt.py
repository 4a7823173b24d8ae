"""A catalog's learnt signal: what its labelled requests say about a new request.

Built from a learnt model (learning.fit) and kept in the snapshot, so a request
pays one product with the labelled requests' vectors and a few postings lookups,
for the active signals only: ``knn``, ``expansion`` and ``centroid``, each 0..1,
fused into the engine's score (``fuse``) so thresholds keep their meaning, and
``no_tool_similarity``. Pure numpy.
The rules: docs/explanation/learning.md, What a request pays for what was learnt.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from selection.engine.notool import decide
from selection.engine.text import tokenize

SIGNALS = ("knn", "expansion", "centroid")
DEFAULT_K = 10
BM25_K1, BM25_B = 1.2, 0.75
# Up to this many examples (that name tools) a request is compared with each of
# them; above it with the clusters' centres and the examples of PROBES clusters.
EXACT_EXAMPLES = 1_000
# sqrt(examples) clusters (100 for 10,000); a request reads the examples of this
# share of them (at least MIN_PROBES): ~11% of MetaTool's 5,000 per fold, which
# held 96% of a held-out request's 10 nearest, and the learnt ranking's NDCG@10
# was that of the full scan (0.889; bench/learning.py, bench/README.md).
CLUSTERS_PER_ROOT = 1.0
PROBE_SHARE = 0.09
MIN_PROBES = 8
KMEANS_ROUNDS = 6
KMEANS_SAMPLE = 64  # examples per cluster the centres are fitted on (at most)


@dataclass(frozen=True, eq=False)
class LearntSignal:
    """The labelled requests of one catalog, ready to score a request.

    ``examples`` holds one unit vector per labelled request; ``example_tools[i]``
    the rows (in ``tools``) of the tools it named (empty: no tool fits)."""

    model_id: str
    embedding_model: str
    tools: tuple[str, ...]
    examples: np.ndarray
    example_tools: tuple[tuple[int, ...], ...]
    texts: tuple[str, ...]
    weights: Mapping[str, float] = field(default_factory=dict)
    k: int = DEFAULT_K
    # The fitted "no tool fits" decision (selection.engine.notool), if any.
    no_tool_decision: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "_built", _Built.of(self))

    @property
    def built(self) -> _Built:
        """The derived arrays (postings, centroids, pair lists)."""
        found: _Built = self.__dict__["_built"]
        return found

    def with_weights(self, weights: Mapping[str, float], k: int) -> LearntSignal:
        """The same examples with other fusion weights (no rebuild)."""
        copy = object.__new__(LearntSignal)
        copy.__dict__.update(self.__dict__)
        object.__setattr__(copy, "weights", dict(weights))
        object.__setattr__(copy, "k", k)
        return copy

    def scores(
        self,
        vector: np.ndarray | None,
        terms: Mapping[str, float],
        only: Collection[str] = SIGNALS,
    ) -> dict[str, np.ndarray]:
        """Each signal over ``tools`` for a request (its unit vector and terms);
        signals not in ``only`` stay 0 (not computed). The nearest examples are
        found exactly (every example scanned)."""
        found = self._signals(vector, terms, only, exact=True)
        return {name: found.get(name, np.zeros(len(self.tools))) for name in SIGNALS}

    def request_scores(
        self, vector: np.ndarray | None, terms: Mapping[str, float]
    ) -> dict[str, np.ndarray]:
        """The active signals over ``tools`` for one request (the engine's path):
        only signals with a weight are computed, the nearest examples through
        the clusters when there are more than ``EXACT_EXAMPLES``."""
        return self._signals(vector, terms, self.active, exact=False)

    def warm(self) -> LearntSignal:
        """Build the request-time structures now (at snapshot load) and return self."""
        _ = self.nearest_index
        return self

    @cached_property
    def nearest_index(self) -> _Clusters | None:
        """Clusters of the examples that name tools, when there are more than
        ``EXACT_EXAMPLES`` of them (built on first use; None: scan them all)."""
        vectors = self.built.tool_examples
        if len(vectors) <= EXACT_EXAMPLES or vectors.shape[1] == 0:
            return None
        return _Clusters.of(vectors)

    def _signals(
        self,
        vector: np.ndarray | None,
        terms: Mapping[str, float],
        only: Collection[str],
        exact: bool,
    ) -> dict[str, np.ndarray]:
        n = len(self.tools)
        out: dict[str, np.ndarray] = {}
        b = self.built
        comparable = self._comparable(vector)
        query = np.asarray(vector, dtype=np.float32) if comparable else None
        if "knn" in only:
            out["knn"] = np.zeros(n)
            if query is not None and len(b.tool_examples):
                index = None if exact else self.nearest_index
                if index is None:
                    positions, sims = _top(_scan(b.tool_examples, query), self.k)
                else:
                    positions, sims = index.nearest(query, self.k)
                self._knn_into(out["knn"], positions, sims)
        if "centroid" in only:
            out["centroid"] = np.zeros(n)
            if query is not None and b.centroids.shape[0]:
                cent = _scan(b.centroids, query)
                out["centroid"][b.centroid_rows] = np.clip(cent, 0.0, 1.0)
        if "expansion" in only:
            out["expansion"] = b.expansion(terms, n)
        return out

    @property
    def active(self) -> tuple[str, ...]:
        """The signals with a weight above 0."""
        return tuple(s for s in SIGNALS if self.weights.get(s, 0.0) > 0)

    def _comparable(self, vector: np.ndarray | None) -> bool:
        """Whether ``vector`` lives in the examples' space."""
        return (
            vector is not None
            and len(self.examples) > 0
            and self.examples.ndim == 2
            and self.examples.shape[1] == np.shape(vector)[-1]
        )

    def _knn_into(
        self, out: np.ndarray, positions: np.ndarray, sims: np.ndarray
    ) -> None:
        """``out[tool]``: the best (non-negative) cosine among the examples at
        ``positions`` (of ``built.tool_examples``) that name the tool."""
        named = self.built.with_tools
        for position, sim in zip(positions.tolist(), sims.tolist(), strict=True):
            value = max(sim, 0.0)
            for row in self.example_tools[int(named[position])]:
                if value > out[row]:
                    out[row] = value

    def decide_no_tool(
        self,
        vector: np.ndarray | None,
        scores: np.ndarray,
        tool_sim: float | None = None,
    ) -> dict[str, Any] | None:
        """The learnt "no tool fits" answer for a request (None: a tool fits, or
        there is no decision); ``scores``: the fused scores of the candidates,
        ``tool_sim``: the best ``knn`` cosine when the request computed it."""
        if not self.no_tool_decision or not len(self.built.no_tool):
            return None
        if "_none_mask" not in self.__dict__:
            mask = np.zeros(len(self.example_tools), dtype=bool)
            mask[self.built.no_tool] = True
            self.__dict__["_none_mask"] = mask
        mask = self.__dict__["_none_mask"]
        return decide(
            self.no_tool_decision, self.examples, mask, vector, scores, tool_sim
        )

    def no_tool_similarity(self, vector: np.ndarray | None) -> float:
        """The cosine of the nearest labelled "no tool fits" request (0 if none)."""
        b = self.built
        if vector is None or not len(b.no_tool) or not self._comparable(vector):
            return 0.0
        sims = _scan(self.examples[b.no_tool], np.asarray(vector, dtype=np.float32))
        return float(sims.max())


def _scan(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` for a large matrix, in one thread: einsum, not BLAS
    (whose threads wait for a busy core, see VectorTable.nearest)."""
    return np.einsum("ij,j->i", matrix, query)


def _dot(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` for a small matrix (a cluster, the centres): BLAS's
    sgemv, 3 to 4 times faster than einsum there. The app runs one BLAS thread
    per process (config.threads)."""
    return np.dot(matrix, query)


def _top(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions and values of the ``k`` largest of ``sims`` (any order)."""
    k = min(k, len(sims))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=sims.dtype)
    top = np.argpartition(-sims, k - 1)[:k]
    return top, sims[top]


def fuse(
    base: np.ndarray, signals: Mapping[str, np.ndarray], weights: Mapping[str, float]
) -> np.ndarray:
    """``(base + sum w_i * signal_i) / (1 + sum w_i)``: 0..1 like ``base``."""
    total = 1.0
    out = np.array(base, dtype=np.float64)
    for name in SIGNALS:
        w = float(weights.get(name, 0.0))
        if w > 0:
            out += w * signals[name]
            total += w
    out /= total
    return out


@dataclass(frozen=True)
class _Built:
    """Arrays derived once from the examples."""

    with_tools: np.ndarray
    tool_examples: np.ndarray
    no_tool: np.ndarray
    centroids: np.ndarray
    centroid_rows: np.ndarray
    postings: dict[str, tuple[np.ndarray, np.ndarray]]

    @staticmethod
    def of(signal: LearntSignal) -> _Built:
        named = [i for i, rows in enumerate(signal.example_tools) if rows]
        empty = [i for i, rows in enumerate(signal.example_tools) if not rows]
        members: dict[int, list[int]] = {}
        for i in named:
            for row in signal.example_tools[i]:
                members.setdefault(row, []).append(i)
        rows = np.array(sorted(members), dtype=np.int64)
        dim = signal.examples.shape[1] if signal.examples.ndim == 2 else 0
        cents = np.zeros((len(rows), dim), dtype=np.float32)
        for j, row in enumerate(rows):
            mean = signal.examples[members[int(row)]].mean(axis=0)
            cents[j] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        with_tools = np.array(named, dtype=np.int64)
        return _Built(
            with_tools=with_tools,
            tool_examples=np.ascontiguousarray(signal.examples[with_tools])
            if signal.examples.ndim == 2 and len(signal.examples)
            else np.zeros((0, dim), dtype=np.float32),
            no_tool=np.array(empty, dtype=np.int64),
            centroids=cents,
            centroid_rows=rows,
            postings=_postings(signal.texts, members, len(signal.tools)),
        )

    def expansion(self, terms: Mapping[str, float], n: int) -> np.ndarray:
        """BM25 over the tools' labelled text, relative to the best tool's."""
        rows, values = [], []
        for term, weight in terms.items():
            found = self.postings.get(term)
            if found is not None:
                rows.append(found[0])
                values.append(weight * found[1])
        if not rows:
            return np.zeros(n)
        # One pass, summing each tool's terms in the order of ``terms``.
        out = np.bincount(
            np.concatenate(rows), weights=np.concatenate(values), minlength=n
        )
        best = float(out.max(initial=0.0))
        return out / best if best > 0 else out


@dataclass(frozen=True)
class _Clusters:
    """The examples that name tools grouped by spherical k-means: a request reads
    the centres, then the examples of its ``probes`` nearest clusters (an
    inverted file; it misses a neighbour only when that one sits in a cluster
    whose centre is further from the request than ``probes`` others)."""

    centres: np.ndarray  # (clusters x dimension) unit vectors
    members: tuple[np.ndarray, ...]  # per cluster: its examples' positions
    blocks: tuple[np.ndarray, ...]  # per cluster: its examples' vectors, contiguous
    probes: int

    @staticmethod
    def of(vectors: np.ndarray, seed: int = 0) -> _Clusters:
        count = max(2, round(CLUSTERS_PER_ROOT * math.sqrt(len(vectors))))
        centres = _kmeans(vectors, count, seed)
        assign = np.concatenate(
            [
                np.argmax(vectors[i : i + 4096] @ centres.T, axis=1)
                for i in range(0, len(vectors), 4096)
            ]
        )
        members = tuple(np.flatnonzero(assign == c) for c in range(count))
        return _Clusters(
            centres=np.ascontiguousarray(centres, dtype=np.float32),
            members=members,
            blocks=tuple(
                np.ascontiguousarray(vectors[m], dtype=np.float32) for m in members
            ),
            probes=min(count, max(MIN_PROBES, math.ceil(count * PROBE_SHARE))),
        )

    def nearest(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions (in tool_examples) and cosines of the ``k`` nearest examples
        among the probed clusters' (any order)."""
        near = _dot(self.centres, query)
        probed = np.argpartition(-near, self.probes - 1)[: self.probes].tolist()
        sims = np.concatenate([_dot(self.blocks[c], query) for c in probed])
        top, values = _top(sims, k)
        return np.concatenate([self.members[c] for c in probed])[top], values


def _kmeans(vectors: np.ndarray, count: int, seed: int) -> np.ndarray:
    """``count`` unit centres by spherical k-means (``KMEANS_ROUNDS`` rounds) on
    at most ``KMEANS_SAMPLE`` examples per centre; fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    sample = vectors.astype(np.float32)
    if len(sample) > count * KMEANS_SAMPLE:
        sample = sample[rng.choice(len(sample), count * KMEANS_SAMPLE, replace=False)]
    centres = sample[rng.choice(len(sample), count, replace=False)].copy()
    for _ in range(KMEANS_ROUNDS):
        assign = np.argmax(sample @ centres.T, axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, assign, sample)
        norms = np.linalg.norm(sums, axis=1)
        filled = norms > 1e-12  # an empty cluster keeps its centre
        centres[filled] = sums[filled] / norms[filled, None]
    return centres


def _postings(
    texts: Sequence[str], members: Mapping[int, list[int]], n: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """term -> (tool rows, BM25 weights) over each tool's labelled requests."""
    tokens = [tokenize(t) for t in texts]
    docs = {
        row: Counter(w for i in ex for w in tokens[i]) for row, ex in members.items()
    }
    if not docs:
        return {}
    lengths = {row: sum(c.values()) for row, c in docs.items()}
    mean = max(sum(lengths.values()) / len(docs), 1.0)
    df = Counter(term for c in docs.values() for term in c)
    lists: dict[str, tuple[list[int], list[float]]] = {}
    for row, counts in docs.items():
        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[row] / mean)
        for term, tf in counts.items():
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            entry = lists.setdefault(term, ([], []))
            entry[0].append(row)
            entry[1].append(idf * tf * (BM25_K1 + 1) / (tf + norm))
    return {
        term: (np.array(r, dtype=np.int64), np.array(w))
        for term, (r, w) in lists.items()
    }
