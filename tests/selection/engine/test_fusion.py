"""The hybrid's fusion chosen from the catalog itself (selection.engine.fusion):
how much BM25F counts follows how far the catalog's words agree with its
embeddings, siblings of a name family are pulled towards their best member, and
every answer says what was chosen and why."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pytest

from selection.engine import CatalogSnapshot, EngineSettings, SelectionRequest, select
from selection.engine.fusion import (
    AGREEMENT_HIGH,
    AGREEMENT_LOW,
    FAMILY_SIZE,
    LEXICAL_WEIGHT_HIGH,
    LEXICAL_WEIGHT_LOW,
    SHORT_REQUEST_TERMS,
    CatalogFusion,
    family_key,
    hybrid_weights,
    pulled,
)
from selection.engine.patch import Change, patch
from selection.engine.records import record_from_dict
from selection.engine.text import tokenize
from selection.engine.vectors import VectorTable, unit_rows

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
TOPICS = (
    "weather forecast rain temperature",
    "currency exchange rate convert",
    "hotel booking room reservation",
    "flight ticket airline airport",
    "restaurant table menu dinner",
    "museum exhibition art gallery",
    "train railway station timetable",
    "taxi ride driver pickup",
)


def topic_catalog(count: int = 40, prefix: str = "") -> tuple:
    """Tools each about one topic (words from it), numbered within the topic."""
    rows = []
    for n in range(count):
        words = TOPICS[n % len(TOPICS)].split()
        name = f"{prefix}{words[0]}_{words[1]}_{n}"
        description = f"{' '.join(words[n % 4 :] + words[: n % 4])} service {n}"
        rows.append({"name": name, "description": description, "parameters": SCHEMA})
    return tuple(record_from_dict(r, i, i) for i, r in enumerate(rows))


def word_vectors(records: tuple) -> np.ndarray:
    """Vectors made of each tool's own words: cosine follows shared words."""
    out = np.zeros((len(records), 256), dtype=np.float32)
    for row, tool in enumerate(records):
        for token in tokenize(f"{tool.name} {tool.description}"):
            digest = hashlib.sha256(token.encode()).digest()
            out[row, digest[0]] += 1.0
    return out


def random_vectors(records: tuple) -> np.ndarray:
    return np.random.default_rng(7).normal(size=(len(records), 64)).astype("f4")


def snapshot(records: tuple, vectors: np.ndarray | None, **settings) -> CatalogSnapshot:
    table = None
    if vectors is not None:
        present = np.ones(len(records), dtype=bool)
        table = VectorTable("test-model", unit_rows(vectors), present)
    merged = EngineSettings.from_dict(settings)
    return CatalogSnapshot("c", "1", records, merged, vectors=table).warm()


def test_a_catalog_whose_words_agree_with_its_embeddings_gives_bm25f_the_most():
    snap = snapshot(topic_catalog(), word_vectors(topic_catalog()))
    assert snap.fusion.agreement is not None
    assert snap.fusion.agreement >= AGREEMENT_HIGH
    assert snap.fusion.lexical_weight == LEXICAL_WEIGHT_HIGH
    assert hybrid_weights(snap.settings, snap.fusion)["bm25f"] == LEXICAL_WEIGHT_HIGH


def test_a_catalog_whose_embeddings_ignore_its_words_gives_bm25f_the_least():
    records = topic_catalog()
    snap = snapshot(records, random_vectors(records))
    assert snap.fusion.agreement is not None
    assert snap.fusion.agreement <= AGREEMENT_LOW
    assert hybrid_weights(snap.settings, snap.fusion)["bm25f"] == LEXICAL_WEIGHT_LOW


@pytest.mark.parametrize("agreement", [0.0, AGREEMENT_LOW, 0.44, AGREEMENT_HIGH, 1])
def test_the_bm25f_weight_rises_with_the_agreement_between_the_knees(agreement):
    fusion = CatalogFusion(agreement, 200, np.zeros(0, np.int64), np.zeros(0))
    share = (agreement - AGREEMENT_LOW) / (AGREEMENT_HIGH - AGREEMENT_LOW)
    expected = LEXICAL_WEIGHT_HIGH * min(max(share, 0.0), 1.0)
    assert fusion.lexical_weight == pytest.approx(expected)


def test_without_tool_vectors_nothing_is_measured_and_the_settings_weight_holds():
    snap = snapshot(topic_catalog(), None, hybrid_weights={"embed": 0.6, "bm25f": 0.2})
    assert snap.fusion.agreement is None
    assert hybrid_weights(snap.settings, snap.fusion)["bm25f"] == 0.2
    fusion = _stats(snap)
    assert fusion["chosen_by"] == "settings"
    assert "not measured" in fusion["why"]


def test_with_most_embeddings_still_pending_nothing_is_measured():
    records = topic_catalog()
    present = np.zeros(len(records), dtype=bool)
    present[: len(records) // 3] = True
    table = VectorTable("m", unit_rows(word_vectors(records)), present)
    snap = CatalogSnapshot("c", "1", records, vectors=table).warm()
    assert snap.fusion.agreement is None


def test_auto_fusion_off_keeps_the_settings_weight_though_the_catalog_was_measured():
    records = topic_catalog()
    snap = snapshot(records, word_vectors(records), auto_fusion=False)
    assert snap.fusion.agreement is not None
    assert hybrid_weights(snap.settings, snap.fusion)["bm25f"] == 0.1
    fusion = _stats(snap)
    assert fusion["chosen_by"] == "settings"
    assert "auto_fusion is off" in fusion["why"]


LONG = " ".join(f"word{n}" for n in range(SHORT_REQUEST_TERMS)) + " weather"


def test_every_answer_says_which_weights_the_catalog_chose_and_why():
    records = topic_catalog()
    snap = snapshot(records, word_vectors(records))
    fusion = _stats(snap, LONG)
    assert fusion["chosen_by"] == "catalog"
    assert fusion["weights"]["bm25f"] == LEXICAL_WEIGHT_HIGH
    assert fusion["lexical_agreement"] == round(snap.fusion.agreement, 4)
    assert fusion["agreement_sample"] == len(records)
    assert f"{snap.fusion.agreement:.2f}" in fusion["why"]


@pytest.mark.parametrize("terms", [1, 3, SHORT_REQUEST_TERMS - 1])
def test_a_short_request_gets_its_share_of_the_bm25f_weight_and_is_told(terms):
    records = topic_catalog()
    snap = snapshot(records, word_vectors(records))
    query = " ".join(f"word{n}" for n in range(terms))
    fusion = _stats(snap, query)
    share = terms / SHORT_REQUEST_TERMS
    assert fusion["weights"]["bm25f"] == round(LEXICAL_WEIGHT_HIGH * share, 4)
    assert f"x{share:.2f} for a request of {terms} content words" in fusion["why"]


def test_the_chosen_weight_changes_the_ranking_as_a_curator_setting_it_would():
    records = topic_catalog()
    vectors = word_vectors(records)
    auto = snapshot(records, vectors)
    fixed = snapshot(
        records,
        vectors,
        auto_fusion=False,
        hybrid_weights={"embed": 0.6, "lexical": 0.3, "bm25f": 0.08, "name": 0.1},
    )
    # Three content words (rain, temperature, tomorrow): 3/15 of the catalog's 0.4.
    request = SelectionRequest(query="rain temperature for tomorrow", min_score=0)
    pool = {t.name: 0.1 + 0.001 * i for i, t in enumerate(records)}
    a = select(auto, request, semantic=pool)
    b = select(fixed, request, semantic=pool)
    assert [p.name for p in a.tools] == [p.name for p in b.tools]
    assert [p.score for p in a.tools] == [p.score for p in b.tools]


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("Yahoo_Finance__stock_profile", "Yahoo_Finance"),
        ("github.create_issue", "github"),
        ("math.special.gamma", "math.special"),
        ("fs/read:file", "fs/read"),
        ("getWeatherForecast", None),
        ("send_email", None),
        (".hidden", None),
    ],
)
def test_a_family_is_the_name_before_its_last_separator(name, family):
    assert family_key(name) == family


def test_a_prefix_only_one_tool_has_makes_no_family():
    records = topic_catalog(6, prefix="solo__") + tuple(
        record_from_dict({"name": "other__tool", "parameters": SCHEMA}, 99, 99)
        for _ in range(1)
    )
    snap = snapshot(records, None)
    assert snap.fusion.families == 1
    assert snap.fusion.family[-1] == -1


def _fusion(names: list[str]) -> CatalogFusion:
    records = tuple(
        record_from_dict({"name": n, "parameters": SCHEMA}, i, i)
        for i, n in enumerate(names)
    )
    return snapshot(records, None).fusion


def test_siblings_are_pulled_towards_their_familys_best_and_the_best_stays():
    fusion = _fusion(["fx__rate", "fx__convert", "weather__now", "weather__week"])
    fused = np.array([0.8, 0.2, 0.5, 0.4])
    pull = pulled(fused, np.ones(4, dtype=bool), fusion, 0.5)
    assert pull.tolist() == pytest.approx([0.0, 0.3, 0.0, 0.05])


def test_a_large_family_is_pulled_less_than_a_small_one():
    names = [f"big__t{i}" for i in range(4 * FAMILY_SIZE)] + ["small__a", "small__b"]
    fusion = _fusion(names)
    fused = np.zeros(len(names))
    fused[[0, len(names) - 2]] = 1.0
    pull = pulled(fused, np.ones(len(names), dtype=bool), fusion, 0.5)
    assert pull[1] == pytest.approx(0.5 / 4)
    assert pull[-1] == pytest.approx(0.5)


def test_a_tool_the_caller_may_not_see_pulls_no_sibling():
    fusion = _fusion(["fx__rate", "fx__convert"])
    fused = np.array([0.9, 0.1])
    assert pulled(fused, np.array([False, True]), fusion, 0.5).tolist() == [0, 0]


def test_the_pull_works_on_one_row_per_request_as_on_one_request():
    fusion = _fusion(["fx__rate", "fx__convert", "solo"])
    rows = np.array([[0.8, 0.2, 0.1], [0.1, 0.6, 0.9]])
    mask = np.ones_like(rows, dtype=bool)
    both = pulled(rows, mask, fusion, 0.5)
    for i in range(2):
        assert both[i].tolist() == pulled(rows[i], mask[i], fusion, 0.5).tolist()


def test_a_sibling_of_the_clear_match_is_lifted_and_its_answer_says_why():
    others = tuple(t for t in topic_catalog(14) if "currency" not in t.name)
    fx = (
        ("fx__rate", "Current exchange rate between two currencies."),
        ("fx__history", "Past values of a currency pair over a range of dates."),
    )
    records = others + tuple(
        record_from_dict({"name": n, "description": d, "parameters": SCHEMA}, i, i)
        for i, (n, d) in enumerate(fx, start=len(others))
    )
    snap = snapshot(records, None)
    off = snap.with_settings(replace(snap.settings, family_pull=0.0))
    request = SelectionRequest(query="exchange rate for euro", min_score=0)
    pool = {t.name: 0.3 for t in records}
    lifted = select(snap, request, semantic=pool)
    plain = select(off, request, semantic=pool)
    assert lifted.names[:2] == ["fx__rate", "fx__history"]
    assert "fx__history" not in plain.names
    pick = lifted.tools[1]
    assert pick.signals["family"] > 0
    assert "sharing its name prefix" in pick.reason


def test_a_catalog_without_families_ranks_exactly_as_without_the_pull():
    records = topic_catalog()
    snap = snapshot(records, None)
    off = snap.with_settings(replace(snap.settings, family_pull=0.0))
    request = SelectionRequest(query="hotel room for two", min_score=0)
    pool = {t.name: 0.2 + 0.01 * (i % 7) for i, t in enumerate(records)}
    a, b = select(snap, request, semantic=pool), select(off, request, semantic=pool)
    assert [(p.name, p.score) for p in a.tools] == [(p.name, p.score) for p in b.tools]


def test_a_patched_snapshot_keeps_the_measured_agreement_and_reads_new_families():
    records = topic_catalog()
    snap = snapshot(records, word_vectors(records))
    added = record_from_dict({"name": "new__a", "parameters": SCHEMA}, 500, 500)
    twin = record_from_dict({"name": "new__b", "parameters": SCHEMA}, 501, 501)
    change = Change(frozenset(), {}, (added, twin))
    new, _ = patch(snap, change, version="2", vectors=None, inline_index_max=10)
    assert new.fusion.agreement == snap.fusion.agreement
    assert new.fusion.families == 1


def _stats(snap: CatalogSnapshot, query: str = "weather") -> dict:
    request = SelectionRequest(query=query, min_score=0)
    return select(snap, request, semantic={snap.tools[0].name: 0.5}).stats.fusion
