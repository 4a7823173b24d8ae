"""Lexical signals over the snapshot's index, as dense per-tool arrays.

Each function adds up only the postings of the query's own terms, so its cost
grows with how many tools share the query's words, not with the catalog size;
the postings of all the query's terms are gathered at once (``Postings.gather``)
and summed by ``np.bincount``, in the order a loop over the terms would add them.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from selection.engine.index import EXAMPLE_SHARE, LexicalIndex
from selection.engine.normalize import NormalizedQuery


def query_mass(index: LexicalIndex, query: NormalizedQuery) -> float:
    """Sum over query terms of weight x IDF (absent terms at the highest IDF)."""
    return sum(w * index.term_idf(t) for t, w in index.term_ids(query.terms))


# The last (index, query, known terms): one request asks for its known terms
# four or five times (BM25F, overlap, name and tag coverage). Both are immutable
# and compared by identity, held weakly (an old snapshot's index is not kept
# alive by this); a thread that finds another request's just computes its own.
Known = tuple[np.ndarray, np.ndarray]
_last: tuple[weakref.ref[Any], weakref.ref[Any], Known] | None = None


def known_terms(index: LexicalIndex, query: NormalizedQuery) -> Known:
    """The query's terms the catalog has: their ids and weights, in query order."""
    global _last
    last = _last
    if last is not None and last[0]() is index and last[1]() is query:
        return last[2]
    pairs = [(t, w) for t, w in index.term_ids(query.terms) if t is not None]
    ids = np.fromiter((t for t, _ in pairs), dtype=np.int64, count=len(pairs))
    weights = np.fromiter((w for _, w in pairs), dtype=np.float64, count=len(pairs))
    ids.flags.writeable = weights.flags.writeable = False
    _last = (weakref.ref(index), weakref.ref(query), (ids, weights))
    return ids, weights


def _summed(n: int, docs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per tool, the sum of ``values`` over its entries in ``docs``: added in
    the order given, as ``acc[docs] += ...`` term after term would."""
    if not len(docs):  # bincount would answer integers
        return np.zeros(n, dtype=np.float64)
    summed: np.ndarray = np.bincount(docs, weights=values, minlength=n)
    return summed


def bm25f(index: LexicalIndex, query: NormalizedQuery) -> np.ndarray:
    """BM25F evidence as the share of the query's IDF mass a tool covers (0..1)."""
    mass = query_mass(index, query)
    if mass <= 0:
        return np.zeros(index.n_docs, dtype=np.float64)
    ids, weights = known_terms(index, query)
    docs, which, vals = index.impacts.gather(ids)
    if vals is None:
        return np.zeros(index.n_docs, dtype=np.float64)
    # weight x impact in float32, the impacts' type, as a Python float times a
    # float32 array gives
    acc = _summed(index.n_docs, docs, weights.astype(np.float32)[which] * vals)
    return np.minimum(acc / mass, 1.0)


def overlap(index: LexicalIndex, query: NormalizedQuery, field: str) -> np.ndarray:
    """Per tool: total query weight of the distinct query terms found in ``field``."""
    ids, weights = known_terms(index, query)
    docs, which, _ = index.fields[field].gather(ids)
    return _summed(index.n_docs, docs, weights[which])


def overlap_count(index: LexicalIndex, query: NormalizedQuery) -> np.ndarray:
    """Per tool: how many distinct query terms appear in its name/description/..."""
    ids, _ = known_terms(index, query)
    docs, _, _ = index.fields["overlap"].gather(ids)
    counts: np.ndarray = np.bincount(docs, minlength=index.n_docs).astype(np.int64)
    return counts


def keyword(index: LexicalIndex, query: NormalizedQuery) -> np.ndarray:
    """Seed 000's token overlap: share of query terms found in the tool's text,
    a word only its examples hold at ``EXAMPLE_SHARE``, scaled down for a tool
    with far more distinct words than the catalog's norm
    (``LexicalIndex.share_credit``: listing words buys no coverage)."""
    total = sum(query.terms.values())
    if total <= 0:
        return np.zeros(index.n_docs, dtype=np.float64)
    plain = overlap(index, query, "overlap")
    examples = overlap(index, query, "overlap_examples") - plain
    found: np.ndarray = (plain + EXAMPLE_SHARE * examples) / total
    return found * index.share_credit


def field_coverage(
    index: LexicalIndex, query: NormalizedQuery, field: str
) -> np.ndarray:
    """Share of a field's IDF mass (name, tags, category) that the query mentions.

    1.0 when every word of, say, the tool's name appears in the query; graded by
    IDF so the distinctive words of the name matter more than "get" or "tool".
    """
    ids, weights = known_terms(index, query)
    docs, which, _ = index.fields[field].gather(ids)
    per_term = weights * index.idf[ids].astype(np.float64)
    acc = _summed(index.n_docs, docs, per_term[which])
    mass = index.masses[field]
    out = np.zeros_like(acc)
    np.divide(acc, mass, out=out, where=mass > 0)
    return np.minimum(out, 1.0)
