"""Lexical signals over the snapshot's index, as dense per-tool arrays.

Each function adds up only the postings of the query's own terms, so its cost
grows with how many tools share the query's words, not with the catalog size.
"""

from __future__ import annotations

import numpy as np

from selection.engine.index import LexicalIndex
from selection.engine.normalize import NormalizedQuery


def query_mass(index: LexicalIndex, query: NormalizedQuery) -> float:
    """Sum over query terms of weight x IDF (absent terms at the highest IDF)."""
    return sum(w * index.term_idf(t) for t, w in index.term_ids(query.terms))


def bm25f(index: LexicalIndex, query: NormalizedQuery) -> np.ndarray:
    """BM25F evidence as the share of the query's IDF mass a tool covers (0..1)."""
    acc = np.zeros(index.n_docs, dtype=np.float64)
    mass = query_mass(index, query)
    if mass <= 0:
        return acc
    for term, weight in index.term_ids(query.terms):
        if term is None:
            continue
        docs, vals = index.impacts.rows(term)
        if vals is not None and len(docs):
            acc[docs] += weight * vals
    return np.minimum(acc / mass, 1.0)


def overlap(index: LexicalIndex, query: NormalizedQuery, field: str) -> np.ndarray:
    """Per tool: total query weight of the distinct query terms found in ``field``."""
    acc = np.zeros(index.n_docs, dtype=np.float64)
    postings = index.fields[field]
    for term, weight in index.term_ids(query.terms):
        if term is not None:
            docs, _ = postings.rows(term)
            acc[docs] += weight
    return acc


def overlap_count(index: LexicalIndex, query: NormalizedQuery) -> np.ndarray:
    """Per tool: how many distinct query terms appear in its name/description/..."""
    acc = np.zeros(index.n_docs, dtype=np.int64)
    postings = index.fields["overlap"]
    for term, _ in index.term_ids(query.terms):
        if term is not None:
            docs, _ = postings.rows(term)
            acc[docs] += 1
    return acc


def keyword(index: LexicalIndex, query: NormalizedQuery) -> np.ndarray:
    """Seed 000's token overlap: share of query terms found in the tool's text."""
    total = sum(query.terms.values())
    if total <= 0:
        return np.zeros(index.n_docs, dtype=np.float64)
    return overlap(index, query, "overlap") / total


def field_coverage(
    index: LexicalIndex, query: NormalizedQuery, field: str
) -> np.ndarray:
    """Share of a field's IDF mass (name, tags, category) that the query mentions.

    1.0 when every word of, say, the tool's name appears in the query; graded by
    IDF so the distinctive words of the name matter more than "get" or "tool".
    """
    acc = np.zeros(index.n_docs, dtype=np.float64)
    postings = index.fields[field]
    for term, weight in index.term_ids(query.terms):
        if term is not None:
            docs, _ = postings.rows(term)
            acc[docs] += weight * float(index.idf[term])
    mass = index.masses[field]
    out = np.zeros_like(acc)
    np.divide(acc, mass, out=out, where=mass > 0)
    return np.minimum(out, 1.0)
