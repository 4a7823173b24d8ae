"""Long requests, one sentence at a time: the semantic score of a tool is its
best-matching sentence mixed with the whole request's cosine.

A request of several sentences often asks for several tools, and the whole
request's vector is an average that can sit far from each of them. The
request-level confidence stays the whole request's: one sentence matching a tool
is no evidence the request needs one. Pure numpy, no Django.
The rules: docs/explanation/selection.md, Sentences.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

MIN_WORDS = 3
MAX_SENTENCES = 6
SENTENCE_WEIGHT = 0.7
# A sentence ends at . ? ! followed by white space, or at a line break.
_BOUNDARY = re.compile(r"(?<=[.?!])\s+|\s*[\r\n]+\s*")


class PoolRows(NamedTuple):
    """A named pool's tools as rows of the snapshot whose ``tools`` they index."""

    tools: tuple[Any, ...]
    rows: np.ndarray  # int64, in the pool's order
    scores: np.ndarray  # float64, the pool's scores in the same order


class RowPool(dict[Any, float]):
    """Tool name -> semantic score, which may also know its tools' rows
    (``located``, see ``CatalogSnapshot.named_pool``): the engine then reads the
    pool as arrays instead of looking each name up again."""

    located: PoolRows | None = None


class SentencePool(RowPool):
    """Tool (row or name) -> sentence-mixed semantic score, with the best cosine
    of the whole request to any tool (the request-level confidence's input)."""

    def __init__(self, scores: Mapping[Any, float], request_best: float) -> None:
        super().__init__(scores)
        self.request_best = request_best

    def renamed(self, key: Callable[[Any], Hashable | None]) -> SentencePool:
        """The same pool keyed by ``key(old)`` (entries mapped to None dropped)."""
        named = {key(k): v for k, v in self.items()}
        named.pop(None, None)
        return SentencePool(named, self.request_best)


def split_sentences(text: str) -> list[str]:
    """The request's sentences of at least ``MIN_WORDS`` words (first
    ``MAX_SENTENCES``, each once), or ``[]`` when there are fewer than two:
    a one-sentence request is scored on the whole text alone."""
    found: list[str] = []
    for part in _BOUNDARY.split(text):
        sentence = part.strip()
        if len(sentence.split()) >= MIN_WORDS and sentence not in found:
            found.append(sentence)
    found = found[:MAX_SENTENCES]
    return found if len(found) >= 2 else []


def mix(whole: np.ndarray, per_sentence: np.ndarray) -> np.ndarray:
    """The semantic score: ``whole`` is cosine to the whole request (shape n),
    ``per_sentence`` cosine to each sentence (shape s x n, s may be 0)."""
    whole = np.asarray(whole, dtype=np.float64)
    if len(per_sentence) == 0:
        return whole
    best = np.asarray(per_sentence, dtype=np.float64).max(axis=0)
    return SENTENCE_WEIGHT * best + (1 - SENTENCE_WEIGHT) * whole


def top_k(scores: np.ndarray, k: int, present: np.ndarray | None = None) -> np.ndarray:
    """Rows of the ``k`` highest scores (ties by row), among ``present`` rows."""
    scores = np.asarray(scores, dtype=np.float64).copy()
    if present is not None:
        scores[~present] = -np.inf
        k = min(k, int(np.count_nonzero(present)))
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.lexsort((top, -scores[top]))]


def pooled(
    whole: np.ndarray,
    per_sentence: np.ndarray,
    k: int,
    present: np.ndarray | None = None,
) -> SentencePool:
    """Row -> semantic score over the union of the whole request's and each
    sentence's ``k`` nearest rows (dense cosines of every row to each vector).

    Without sentences this is the whole request's top ``k`` by cosine."""
    nearest = top_k(whole, k, present)
    rows = set(nearest.tolist())
    for scores in per_sentence:
        rows.update(top_k(scores, k, present).tolist())
    at = np.array(sorted(rows), dtype=np.int64)
    # mixed where the pool is, not over the whole catalog (the same numbers)
    mixed = mix(np.asarray(whole)[at], np.asarray(per_sentence)[:, at])
    best = float(whole[nearest[0]]) if len(nearest) else 0.0
    return SentencePool(dict(zip(at.tolist(), mixed.tolist(), strict=True)), best)


def sentence_matrix(vectors: Sequence[np.ndarray], dimension: int) -> np.ndarray:
    """The sentences' vectors as one (s x dimension) float32 matrix."""
    if not vectors:
        return np.zeros((0, dimension), dtype=np.float32)
    return np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
