"""A lexical index patched with a few changed tools, in O(changed) work.

BM25F impacts depend on catalog-wide statistics (document frequencies, average
field lengths), so an exact index is rebuilt from every tool (~8 s at 100,000
tools). ``overlaid`` instead scores the changed tools' current text against the
statistics of the last exact build and lays those postings over it: the changed
rows are masked out of the exact postings and their own postings added
(``Postings.dead`` and ``Postings.extra``). An edit among N tools moves those
statistics by about 1/N, so the other tools' scores are what they were and the
changed tools are scored by their new words at once; the caller rebuilds the
exact index in the background later (``selection.engine.patch.rebuild_index``).
Pure: no Django.
"""

from __future__ import annotations

from collections import ChainMap, Counter
from collections.abc import Mapping
from typing import cast

import numpy as np

from selection.engine.index import (
    EXAMPLES,
    FIELD_TEXT,
    OVERLAP_FIELDS,
    LexicalIndex,
    Postings,
    idf,
    share_credit,
)
from selection.engine.text import tokenize
from selection.engine.types import ToolRecord

# (term id, row, term frequency) triples of one field, and row -> token count.
Triples = tuple[list[tuple[int, int, int]], dict[int, int]]


def overlaid(
    index: LexicalIndex,
    keep: np.ndarray,
    changed: Mapping[int, ToolRecord],
    n_docs: int,
) -> LexicalIndex:
    """``index`` over the new rows: old rows dropped where ``keep`` is False (the
    rest renumbered), and ``changed`` (new row -> record: replaced and appended
    tools) laid over the last exact build."""
    base = index.base or index
    remap = np.where(keep, np.cumsum(keep) - 1, -1)
    if not bool(keep.all()):
        base = realigned(base, keep[: base.n_docs])
    records = {int(remap[r]): t for r, t in index.overlay.items() if remap[r] >= 0}
    records.update(changed)
    return _overlay(base, records, n_docs)


def realigned(index: LexicalIndex, keep: np.ndarray) -> LexicalIndex:
    """An exact index without the rows ``keep`` drops, the rest renumbered
    (statistics left as they were)."""
    remap = np.where(keep, np.cumsum(keep) - 1, -1)
    out = LexicalIndex.__new__(LexicalIndex)
    out.__dict__.update(index.__dict__)
    out.n_docs = int(np.count_nonzero(keep))
    out.fields = {name: _kept(p, remap) for name, p in index.fields.items()}
    out.impacts = _kept(index.impacts, remap)
    out.masses = {k: m[keep] for k, m in index.masses.items()}
    out.share_credit = index.share_credit[keep]
    return out


def _kept(postings: Postings, remap: np.ndarray) -> Postings:
    """Postings without dropped rows (remap < 0), rows renumbered."""
    if not len(postings.docs) or bool((remap >= 0).all()):
        return postings
    docs = remap[postings.docs]
    mask = docs >= 0
    terms = np.repeat(np.arange(len(postings.offsets) - 1), np.diff(postings.offsets))
    counts = np.bincount(terms[mask], minlength=len(postings.offsets) - 1)
    offsets = np.zeros(len(postings.offsets), dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = None if postings.values is None else postings.values[mask]
    return Postings(offsets, docs[mask].astype(np.int32), values)


def _overlay(
    base: LexicalIndex, records: dict[int, ToolRecord], n_docs: int
) -> LexicalIndex:
    """``base`` with ``records``' rows masked out and scored afresh."""
    if not records and n_docs == base.n_docs:
        return base
    new_terms: dict[str, int] = {}
    fields = _tokenized(base, records, new_terms)
    out = LexicalIndex.__new__(LexicalIndex)
    out.__dict__.update(base.__dict__)
    out.base, out.overlay, out.n_docs = base, records, n_docs
    if new_terms:  # the exact vocabulary is a dict; not copied
        out.vocab = ChainMap(new_terms, cast(dict[str, int], base.vocab))
    _statistics(out, base, fields, len(new_terms))
    dead = np.zeros(max(n_docs, base.n_docs), dtype=bool)
    dead[list(records)] = True
    merged = [t for name in OVERLAP_FIELDS for t in fields[name][0]]
    out.fields = {
        name: _with_extra(base.fields[name], dead, _binary(fields[name][0]))
        for name in fields
    }
    out.fields["overlap"] = _with_extra(base.fields["overlap"], dead, _binary(merged))
    merged += fields[EXAMPLES][0]
    out.fields["overlap_examples"] = _with_extra(
        base.fields["overlap_examples"], dead, _binary(merged)
    )
    out.impacts = _with_extra(base.impacts, dead, _impacts(out, base, fields))
    out.masses = {
        k: _masses(m, out, records, fields[k][0]) for k, m in base.masses.items()
    }
    out.share_credit = _credits(base, out.n_docs, records, merged)
    return out


def _tokenized(
    base: LexicalIndex, records: Mapping[int, ToolRecord], new_terms: dict[str, int]
) -> dict[str, Triples]:
    """Per field: the changed rows' triples and lengths (new words get new ids)."""
    out: dict[str, Triples] = {name: ([], {}) for name in FIELD_TEXT}
    start = len(base.vocab)
    for row, tool in sorted(records.items()):
        for name, text_of in FIELD_TEXT.items():
            tokens = tokenize(text_of(tool))
            if not tokens:
                continue
            out[name][1][row] = len(tokens)
            for token, tf in Counter(tokens).items():
                term = base.vocab.get(token)
                if term is None:
                    term = new_terms.setdefault(token, start + len(new_terms))
                out[name][0].append((term, row, tf))
    out[EXAMPLES] = _described(base, out)
    return out


def _described(base: LexicalIndex, fields: dict[str, Triples]) -> Triples:
    """The changed rows' example triples whose words some tool describes: in
    the last exact build or in a changed row's other fields."""
    own = {t for name, (ts, _) in fields.items() if name != EXAMPLES for t, _, _ in ts}
    known = len(base.described)
    kept = [
        (term, row, tf)
        for term, row, tf in fields[EXAMPLES][0]
        if term in own or (term < known and base.described[term])
    ]
    lengths: dict[int, int] = {}
    for _, row, tf in kept:
        lengths[row] = lengths.get(row, 0) + tf
    return kept, lengths


def _credits(
    base: LexicalIndex,
    n_docs: int,
    records: Mapping[int, ToolRecord],
    merged: list[tuple[int, int, int]],
) -> np.ndarray:
    """The keyword share's credit per row, changed rows recounted against the
    last exact build's norm."""
    full = np.ones(n_docs, dtype=np.float64)
    full[: min(len(base.share_credit), n_docs)] = base.share_credit[:n_docs]
    sizes: dict[int, set[int]] = {row: set() for row in records}
    for term, row, _ in merged:
        sizes[row].add(term)
    rows = list(sizes)
    counts = np.array([len(sizes[r]) for r in rows], dtype=np.float64)
    full[rows] = share_credit(counts, base.overlap_norm)
    return full


def _statistics(
    out: LexicalIndex, base: LexicalIndex, fields: dict[str, Triples], added: int
) -> None:
    """Document frequency and IDF for the words only changed tools have."""
    if not added:
        return
    start = len(base.vocab)
    rows_of: dict[int, set[int]] = {}
    for triples, _ in fields.values():
        for term, row, _ in triples:
            if term >= start:
                rows_of.setdefault(term, set()).add(row)
    df = np.array([len(rows_of.get(start + i, ())) for i in range(added)], float)
    out.doc_df = np.concatenate([base.doc_df, df])
    fresh = idf(df, max(base.n_docs, 1)).astype(np.float32)
    out.idf = np.concatenate([base.idf, fresh])


Extra = dict[int, tuple[np.ndarray, np.ndarray | None]]


def _binary(triples: list[tuple[int, int, int]]) -> Extra:
    """term -> (rows that contain it, no values)."""
    found: dict[int, set[int]] = {}
    for term, row, _ in triples:
        found.setdefault(term, set()).add(row)
    return {
        t: (np.array(sorted(rows), dtype=np.int32), None) for t, rows in found.items()
    }


def _with_extra(postings: Postings, dead: np.ndarray, extra: Extra) -> Postings:
    """The exact postings with the dead rows masked and the changed rows' own."""
    return Postings(postings.offsets, postings.docs, postings.values, dead, extra)


def _impacts(
    out: LexicalIndex, base: LexicalIndex, fields: dict[str, Triples]
) -> Extra:
    """term -> row -> capped BM25F impact of the changed rows (base statistics)."""
    weights, k1, b = base.params
    full_credit = max(float(w) for w in weights.values())
    summed: dict[tuple[int, int], float] = {}
    for name, (triples, lengths) in fields.items():
        weight = float(weights.get(name, 0.0))
        if weight <= 0 or not triples or name not in base.avg_len:
            continue
        field_df, avg = base.field_df[name], base.avg_len[name]
        for term, row, tf in triples:
            df = float(field_df[term]) if term < len(field_df) else 0.0
            norm = 1.0 - b + b * lengths[row] / avg
            part = (
                weight * float(idf(max(df, 1.0), base.n_docs)) * tf / (tf + k1 * norm)
            )
            summed[(term, row)] = summed.get((term, row), 0.0) + part
    impacts: dict[int, dict[int, float]] = {}
    for (term, row), value in summed.items():
        capped = min(value / full_credit, float(out.idf[term]))
        impacts.setdefault(term, {})[row] = capped
    return {
        t: (
            np.fromiter(found.keys(), dtype=np.int32, count=len(found)),
            np.fromiter(found.values(), dtype=np.float32, count=len(found)),
        )
        for t, found in impacts.items()
    }


def _masses(
    mass: np.ndarray,
    out: LexicalIndex,
    records: Mapping[int, ToolRecord],
    triples: list[tuple[int, int, int]],
) -> np.ndarray:
    """Per row: total IDF of a field's distinct terms, changed rows recomputed."""
    full = np.zeros(out.n_docs, dtype=np.float64)
    full[: min(len(mass), out.n_docs)] = mass[: out.n_docs]
    full[list(records)] = 0.0
    for term, row, _ in triples:
        full[row] += float(out.idf[term])
    return full
