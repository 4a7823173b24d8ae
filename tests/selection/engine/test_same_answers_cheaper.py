"""The engine's cheaper paths (issue 32) give the very numbers of the plain ones:
postings gathered at once against a loop over the terms, a pool read by its
rows against one read by name, the MMR loop against its first form.
bench/engine_cost.py checks the same on every dev request of three data sets."""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace

import numpy as np
import pytest

from selection.engine import CatalogSnapshot, EngineSettings, SelectionRequest, select
from selection.engine.diversity import _greedy
from selection.engine.explain import field_tokens, matched_terms
from selection.engine.index import FIELD_TEXT, LexicalIndex
from selection.engine.normalize import NormalizedQuery, normalize
from selection.engine.patch import Change, patch
from selection.engine.scorers import lexical
from selection.engine.sentences import SentencePool, mix, pooled
from selection.engine.text import tokenize
from selection.engine.vectors import VectorTable, unit_rows
from tests.selection.engine.helpers import tools

QUERIES = (
    "weather forecast for Paris tomorrow",
    "send an email with the report",
    "create a meeting in my calendar. Then email the invite to the team.",
    "zzqx unknownword",  # no word the catalog has
    "",
)


def query(text: str) -> NormalizedQuery:
    return normalize(SelectionRequest(query=text))


def looped(index: LexicalIndex, q: NormalizedQuery) -> dict[str, np.ndarray]:
    """The signals as the engine computed them before: term after term."""
    out: dict[str, np.ndarray] = {
        k: np.zeros(index.n_docs) for k in ("bm25f", "overlap", "name", "tags")
    }
    counts = np.zeros(index.n_docs, dtype=np.int64)
    mass = lexical.query_mass(index, q)
    for term, weight in index.term_ids(q.terms):
        if term is None:
            continue
        docs, vals = index.impacts.rows(term)
        assert vals is not None
        out["bm25f"][docs] += weight * vals
        out["overlap"][index.fields["overlap"].rows(term)[0]] += weight
        counts[index.fields["overlap"].rows(term)[0]] += 1
        for field in ("name", "tags"):
            docs, _ = index.fields[field].rows(term)
            out[field][docs] += weight * float(index.idf[term])
    out["bm25f"] = np.minimum(out["bm25f"] / mass, 1.0) if mass > 0 else out["bm25f"]
    for field in ("name", "tags"):
        share = np.zeros(index.n_docs)
        np.divide(
            out[field], index.masses[field], out=share, where=index.masses[field] > 0
        )
        out[field] = np.minimum(share, 1.0)
    out["count"] = counts
    return out


def gathered(index: LexicalIndex, q: NormalizedQuery) -> dict[str, np.ndarray]:
    return {
        "bm25f": lexical.bm25f(index, q),
        "overlap": lexical.overlap(index, q, "overlap"),
        "name": lexical.field_coverage(index, q, "name"),
        "tags": lexical.field_coverage(index, q, "tags"),
        "count": lexical.overlap_count(index, q),
    }


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    for key in a:
        assert a[key].dtype == b[key].dtype, key
        assert np.array_equal(a[key], b[key]), key  # bit for bit


@pytest.fixture(scope="module")
def snap() -> CatalogSnapshot:
    return CatalogSnapshot("c", "1", tools(), EngineSettings()).warm()


@pytest.mark.parametrize("text", QUERIES)
def test_gathered_postings_sum_to_the_loop_over_terms(snap, text):
    assert_same(gathered(snap.index, query(text)), looped(snap.index, query(text)))


@pytest.mark.parametrize("text", QUERIES)
def test_a_patched_index_gathers_its_changed_rows_too(snap, text):
    edited = replace(snap.tools[0], description="Hail storm radar and weather maps.")
    new, _ = patch(
        snap,
        Change(frozenset({1}), {0: edited}, ()),
        version="2",
        vectors=None,
        inline_index_max=0,
    )
    assert new.index.impacts.dead is not None  # the overlay, not a rebuild
    assert_same(gathered(new.index, query(text)), looped(new.index, query(text)))


def test_gather_keeps_the_order_of_the_terms_asked(snap):
    index = snap.index
    ids = np.array(sorted(index.vocab.values())[:7][::-1], dtype=np.int64)
    docs, which, vals = index.impacts.gather(ids)
    parts = [index.impacts.rows(int(t)) for t in ids]
    assert np.array_equal(docs, np.concatenate([d for d, _ in parts]))
    assert np.array_equal(vals, np.concatenate([v for _, v in parts]))
    assert np.array_equal(which, np.repeat(np.arange(7), [len(d) for d, _ in parts]))


def vectors(n: int, seed: int = 7) -> VectorTable:
    rng = np.random.default_rng(seed)
    matrix = unit_rows(rng.standard_normal((n, 16)))
    return VectorTable("m", matrix, np.ones(n, dtype=bool))


def by_name_only(pool: dict[str, float]) -> dict[str, float]:
    """The same pool without its rows (a SentencePool stays one)."""
    if isinstance(pool, SentencePool):
        return SentencePool(dict(pool), pool.request_best)
    return dict(pool)


@pytest.mark.parametrize("sentences", [0, 2])
def test_a_pool_read_by_its_rows_ranks_as_one_read_by_name(snap, sentences):
    table = vectors(len(snap.tools))
    with_vectors = replace(snap, vectors=table)
    rng = np.random.default_rng(3)
    for text in QUERIES[:3]:
        q = rng.standard_normal(16).astype(np.float32)
        parts = rng.standard_normal((sentences, 16)).astype(np.float32)
        pool = with_vectors.named_pool(table.nearest_mixed(q, parts, 5))
        assert pool.located is not None
        for way in (
            SelectionRequest(query=text),
            SelectionRequest(query=text, explain=True),
        ):
            fast = select(with_vectors, way, semantic=pool)
            plain = select(with_vectors, way, semantic=by_name_only(pool))
            assert replace(fast, stats=None) == replace(plain, stats=None)
            assert fast.stats.account == plain.stats.account


def test_rows_are_not_kept_when_names_repeat_or_for_another_snapshot(snap):
    twice = (*snap.tools, replace(snap.tools[0], id=99))
    doubled = CatalogSnapshot("c", "1", twice, EngineSettings())
    assert doubled.named_pool({0: 0.5, len(twice) - 1: 0.4}).located is None
    pool = snap.named_pool({1: 0.6, 0: 0.3})
    other = CatalogSnapshot("c", "2", tools(), EngineSettings())
    request = SelectionRequest(query="email the report", min_score=0.0)
    # another snapshot's rows are never trusted: the pool is read by name there
    assert select(other, request, semantic=pool).names == (
        select(other, request, semantic=dict(pool)).names
    )


def test_the_sentence_mix_is_the_same_where_the_pool_is():
    rng = np.random.default_rng(11)
    whole, per_sentence = rng.random(200), rng.random((3, 200))
    pool = pooled(whole, per_sentence, 10)
    everywhere = mix(whole, per_sentence)
    assert pool == {row: float(everywhere[row]) for row in pool}


def greedy_before(value: np.ndarray, vecs: np.ndarray, weight: float) -> list[int]:
    """The MMR loop as first written."""
    similar = vecs @ vecs.T
    nearest = np.full(len(value), -np.inf)
    left = np.ones(len(value), dtype=bool)
    order: list[int] = []
    for _ in range(len(value)):
        penalty = np.where(np.isfinite(nearest), nearest, 0.0)
        gain = np.where(left, (1 - weight) * value - weight * penalty, -np.inf)
        pick = int(np.argmax(gain))
        order.append(pick)
        left[pick] = False
        nearest = np.maximum(nearest, similar[pick])
    return order


def test_the_mmr_loop_picks_as_it_did():
    rng = np.random.default_rng(5)
    for _ in range(300):  # negative cosines and tied values included
        n = int(rng.integers(3, 31))
        vecs = unit_rows(rng.standard_normal((n, 8)))
        value = np.round(rng.random(n), 1)
        weight = float(rng.choice([0.1, 0.3, 0.9]))
        assert _greedy(value, vecs, weight) == greedy_before(value, vecs, weight)


def test_kept_field_words_match_the_tools_text(snap):
    q = query("weather forecast email report calendar meeting")
    for tool in snap.tools:
        for label, words in field_tokens(tool):
            field = {"parameters": "params"}.get(label, label)
            assert words == tuple(dict.fromkeys(tokenize(FIELD_TEXT[field](tool))))
        assert matched_terms(tool, q) == matched_terms(replace(tool), q)


def test_the_last_query_terms_kept_never_keep_an_old_index_alive():
    index = LexicalIndex(tools(), EngineSettings().field_weights)
    lexical.bm25f(index, query("weather forecast"))
    gone = weakref.ref(index)
    del index
    gc.collect()
    assert gone() is None
