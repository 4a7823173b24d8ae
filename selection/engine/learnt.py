"""A catalog's learnt signal: what its labelled requests say about a new request.

Built from a learnt model (learning.fit) and kept in the snapshot, so a request
pays one product of its vector with the labelled requests' vectors plus a few
postings lookups. Three per-tool signals, each 0..1:

* ``knn``: the cosine of the nearest labelled request that named the tool, among
  the request's ``k`` nearest labelled requests (0 for tools none of them named);
* ``expansion``: BM25 of the request's terms over the text of the tool's labelled
  requests, relative to the best tool's (the labels' words as extra tool text);
* ``centroid``: the cosine to the mean of the tool's labelled requests.

``fuse`` adds them to the engine's score with the fitted weights, scaled back to
0..1 so thresholds keep their meaning. Labelled "no tool fits" requests give
``no_tool_similarity``: how close the request is to one of them. Pure numpy.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from selection.engine.notool import decide
from selection.engine.text import tokenize

SIGNALS = ("knn", "expansion", "centroid")
DEFAULT_K = 10
BM25_K1, BM25_B = 1.2, 0.75


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
        signals not in ``only`` stay 0 (not computed)."""
        n = len(self.tools)
        out = {name: np.zeros(n) for name in SIGNALS}
        b = self.built
        if self._comparable(vector):
            assert vector is not None
            query = vector.astype(np.float32)
            if "knn" in only:
                sims = np.einsum("ij,j->i", b.tool_examples, query)
                out["knn"] = self._knn(sims)
            if "centroid" in only and b.centroids.shape[0]:
                cent = np.einsum("ij,j->i", b.centroids, query)
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

    def _knn(self, tool_sims: np.ndarray) -> np.ndarray:
        """Per tool, the best cosine among the ``k`` nearest tool examples
        (``tool_sims``: the cosines of the examples that name tools)."""
        out = np.zeros(len(self.tools))
        b = self.built
        if not len(tool_sims):
            return out
        k = min(self.k, len(tool_sims))
        top = np.argpartition(-tool_sims, k - 1)[:k]
        for i in top:
            rows = self.example_tools[int(b.with_tools[i])]
            out[list(rows)] = np.maximum(out[list(rows)], max(float(tool_sims[i]), 0))
        return out

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
        sims = np.einsum("ij,j->i", self.examples[b.no_tool], vector.astype(np.float32))
        return float(sims.max())


def fuse(
    base: np.ndarray, signals: Mapping[str, np.ndarray], weights: Mapping[str, float]
) -> np.ndarray:
    """``(base + sum w_i * signal_i) / (1 + sum w_i)``: 0..1 like ``base``."""
    total = 1.0
    out = np.array(base, dtype=np.float64)
    for name in SIGNALS:
        w = float(weights.get(name, 0.0))
        if w > 0:
            out = out + w * signals[name]
            total += w
    return out / total


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
        out = np.zeros(n)
        for term, weight in terms.items():
            found = self.postings.get(term)
            if found is not None:
                out[found[0]] += weight * found[1]
        best = float(out.max(initial=0.0))
        return out / best if best > 0 else out


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
