"""Learning fits the engine's own settings (learning.tuning), which speak for
every tool, labelled or not: the recombined scores are the engine's own, a
catalog whose right tools are told apart by their parameters gets field weights
that rank them first on requests it never saw, and labels that leave nothing
to gain propose no change."""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import pytest

from learning.fit import Labelled, fit, relevance
from learning.metrics import ndcg_at_10
from learning.tuning import Search, Tuner, materialised, parts_of, tune
from selection.engine import CatalogSnapshot, EngineSettings, SelectionRequest, select
from selection.engine.normalize import normalize
from selection.engine.records import record_from_dict
from selection.engine.text import tokenize
from selection.engine.vectors import VectorTable, unit_rows

COUNT = 12
PHRASES = ("use the {w} please", "I need {w} now", "run {w} for me", "{w} today")


def word(i: int) -> str:
    """A made-up word per topic (letters only, distinct)."""
    return "".join(chr(97 + (i * 7 + k * 3) % 26) for k in range(5)) + "zq"


def catalog() -> CatalogSnapshot:
    """Per topic a right tool that has the topic's word only in a parameter and
    a decoy whose description mentions it in passing: by default (description
    weighs more than parameters) the decoy wins."""
    rows = []
    for i in range(COUNT):
        w = word(i)
        rows.append(
            {
                "name": f"handler_{chr(97 + i)}",
                "description": "Handles one kind of request.",
                "parameters": {
                    "type": "object",
                    "properties": {w: {"type": "string", "description": f"the {w}"}},
                },
            }
        )
        rows.append(
            {
                "name": f"helper_{chr(97 + i)}",
                "description": f"Notes about {w}: use it, I need it now, run it "
                "for me, please, today and any other day.",
                "parameters": {"type": "object", "properties": {}},
            }
        )
    records = tuple(record_from_dict(r, n, n) for n, r in enumerate(rows))
    return CatalogSnapshot("t", "1", records).warm()


def requests(phrases: tuple[str, ...]) -> list[tuple[SelectionRequest, int]]:
    return [
        (
            SelectionRequest(query=p.format(w=word(i)), max_candidates=50, min_score=0),
            2 * i,
        )
        for i in range(COUNT)
        for p in phrases
    ]


def labelled(asked: list[tuple[SelectionRequest, int]]) -> list[Labelled]:
    out = []
    for request, row in asked:
        query = normalize(request)
        out.append(Labelled(np.zeros(1), query.terms, query.text, (row,)))
    return out


def engine(snap: CatalogSnapshot, request: SelectionRequest, pool=None) -> np.ndarray:
    out = np.zeros(len(snap.tools))
    for pick in select(snap, request, semantic=pool).tools:
        out[snap.by_name[pick.name]] = pick.score
    return out


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"field_weights": {"params": 3.0, "description": 2.0}, "bm25_k1": 0.6},
        {"hybrid_weights": {"embed": 0.3, "lexical": 0.1, "bm25f": 1.0, "name": 0.3}},
    ],
)
@pytest.mark.parametrize("with_pool", [False, True])
def test_the_recombined_scores_are_the_engines_own(changes, with_pool):
    snap = catalog()
    settings = EngineSettings.from_dict(changes)
    asked = requests(PHRASES[:2])
    pools = [
        {t.name: 0.1 + 0.02 * ((n + j) % 9) for n, t in enumerate(snap.tools[:10])}
        if with_pool
        else None
        for j in range(len(asked))
    ]
    parts = [parts_of(snap, r, p) for (r, _), p in zip(asked, pools, strict=True)]
    tuner = Tuner(snap, parts)
    recombined = tuner.matrix(settings)
    other = snap.with_settings(settings)
    for j, (request, _) in enumerate(asked):
        real = engine(other, request, pools[j])
        assert np.allclose(recombined[j][real > 0], real[real > 0], atol=1e-4)
        assert set(np.flatnonzero(real > 0)) <= set(np.flatnonzero(recombined[j] > 0))


def families_with_vectors() -> CatalogSnapshot:
    """The catalog above with its tools in name families of two (``svc3__...``)
    and vectors made of their own words, so that the engine measures its fusion
    (a BM25F weight of its own) and pulls siblings together."""
    snap = catalog()
    records = tuple(
        replace(t, name=f"svc{n // 2}__{t.name}") for n, t in enumerate(snap.tools)
    )
    vectors = np.zeros((len(records), 128), dtype=np.float32)
    for row, tool in enumerate(records):
        for token in tokenize(f"{tool.name} {tool.description} {tool.param_text}"):
            vectors[row, zlib.crc32(token.encode()) % 128] += 1.0
    table = VectorTable("m", unit_rows(vectors), np.ones(len(records), dtype=bool))
    return CatalogSnapshot("t", "1", records, vectors=table).warm()


@pytest.mark.parametrize(
    "changes",
    [{}, {"field_weights": {"params": 3.0, "description": 2.0}}, {"family_pull": 1}],
)
def test_the_recombined_scores_are_the_engines_own_with_a_measured_fusion(changes):
    snap = families_with_vectors()
    assert snap.fusion.agreement is not None and snap.fusion.families == COUNT
    settings = EngineSettings.from_dict(changes)
    asked = [
        (replace(r, query=f"{r.query} svc{i % COUNT}{second(i)}"), row)
        for i, (r, row) in enumerate(requests(PHRASES[:2]))
    ]
    pool = {t.name: 0.1 + 0.02 * (n % 9) for n, t in enumerate(snap.tools)}
    tuner = Tuner(snap, [parts_of(snap, r, pool) for r, _ in asked])
    recombined = tuner.matrix(settings)
    other = snap.with_settings(settings)
    pulled_any = moved_any = False
    for j, (request, _) in enumerate(asked):
        result = select(other, request, semantic=pool)
        real = engine(other, request, pool)
        pulled_any |= any(p.signals.get("family", 0) > 0 for p in result.tools)
        moved_any |= result.stats.fusion["diversified"]
        assert np.allclose(recombined[j][real > 0], real[real > 0], atol=1e-4)
    assert pulled_any and moved_any


def second(i: int) -> str:
    """Every other request gets a second sentence (it is then diversified)."""
    return f". Then run the {word((i + 1) % COUNT)} one too." if i % 2 else ""


def test_tuning_starts_from_the_catalogs_choice_with_auto_fusion_off():
    snap = families_with_vectors()
    chosen = snap.fusion.lexical_weight
    start = materialised(snap.settings, snap.fusion)
    assert not start.auto_fusion and start.hybrid_weights["bm25f"] == chosen
    assert materialised(start, snap.fusion) is start


def test_a_settings_choice_that_clearly_wins_is_fitted_and_holds_on_new_requests():
    snap = catalog()
    train = requests(PHRASES[:3])
    tuner = Tuner(snap, [parts_of(snap, r, None) for r, _ in train])
    labels = labelled(train)
    base = tuner.matrix(snap.settings)
    result = fit(
        [t.name for t in snap.tools], labels, base, tuner=tuner, settings=snap.settings
    )
    report = result.cv["settings"]
    assert report["changed"] and report["ndcg_tuned"] > report["ndcg_before"] + 0.3
    assert "field_weights" in result.settings or "hybrid_weights" in result.settings
    # Requests never seen, through the real engine under the fitted settings.
    fitted = snap.with_settings(
        EngineSettings.from_dict({**snap.settings.to_dict(), **result.settings})
    )
    test = requests(PHRASES[3:])
    rel = relevance(labelled(test), np.arange(len(test)), len(snap.tools))
    before = ndcg_at_10(np.stack([engine(snap, r) for r, _ in test]), rel).mean()
    after = ndcg_at_10(np.stack([engine(fitted, r) for r, _ in test]), rel).mean()
    assert before < 0.7 and after > before + 0.3


def test_labels_the_engine_already_ranks_right_propose_no_settings_change():
    snap = catalog()
    # Asked for the decoys by their own description words: already first.
    asked = [
        (SelectionRequest(query=f"notes about {word(i)}", min_score=0), 2 * i + 1)
        for i in range(COUNT)
    ] * 2
    tuner = Tuner(snap, [parts_of(snap, r, None) for r, _ in asked])
    rel = relevance(labelled(asked), np.arange(len(asked)), len(snap.tools))
    tuned = tune(tuner, snap.settings, rel)
    assert tuned.patch == {}
    assert tuned.settings == snap.settings
    assert tuned.report["changed"] is False


def test_settings_fitted_on_every_label_that_rank_them_no_better_are_not_proposed(
    monkeypatch,
):
    # The folds' searches find the field weights that win (held out), but the
    # search on every label stops where it started: the catalog's own choice
    # written out, which ranks as the settings in force. Proposing it would
    # only turn auto_fusion off.
    snap = catalog()
    asked = requests(PHRASES[:3])
    tuner = Tuner(snap, [parts_of(snap, r, None) for r, _ in asked])
    rel = relevance(labelled(asked), np.arange(len(asked)), len(snap.tools))
    searched = Search.best

    def best(self: Search, start: EngineSettings, on: np.ndarray) -> EngineSettings:
        return start if len(on) == len(self.rows) else searched(self, start, on)

    monkeypatch.setattr(Search, "best", best)
    tuned = tune(tuner, snap.settings, rel)
    assert tuned.report["ndcg_tuned"] > tuned.report["ndcg_before"] + 0.3
    assert tuned.patch == {} and tuned.settings == snap.settings
    assert tuned.report["changed"] is False


def test_labels_that_carry_no_signal_never_propose_a_worse_setting():
    snap = catalog()
    rng = np.random.default_rng(3)
    asked = [(r, int(rng.integers(len(snap.tools)))) for r, _ in requests(PHRASES)]
    tuner = Tuner(snap, [parts_of(snap, r, None) for r, _ in asked])
    rel = relevance(labelled(asked), np.arange(len(asked)), len(snap.tools))
    tuned = tune(tuner, snap.settings, rel)
    if tuned.patch:  # a change is only ever proposed with held-out evidence
        assert tuned.report["ndcg_tuned"] > tuned.report["ndcg_before"]
    else:
        assert tuned.report["ndcg_tuned"] <= tuned.report["ndcg_before"] + 0.002


def test_a_catalog_the_tuner_cannot_reproduce_is_left_alone():
    snap = catalog()
    asked = requests(PHRASES[:3])
    tuner = Tuner(snap, [parts_of(snap, r, None) for r, _ in asked])
    rel = relevance(labelled(asked), np.arange(len(asked)), len(snap.tools))
    for changes in ({"default_scorer": "ensemble"}, {"min_lexical_overlap": 1}):
        settings = EngineSettings.from_dict(changes)
        tuned = tune(tuner, settings, rel)
        assert tuned.patch == {} and tuned.settings == settings


def test_fitted_settings_are_dropped_when_the_learnt_ranking_does_better_without(
    monkeypatch,
):
    import learning.fit as fitting
    from learning.tuning import Tuned

    snap = catalog()
    train = requests(PHRASES[:3])
    labels = labelled(train)
    tuner = Tuner(snap, [parts_of(snap, r, None) for r, _ in train])
    base = tuner.matrix(snap.settings)
    changed = EngineSettings.from_dict({"bm25_k1": 0.6})
    # A search that claims a change which ranks no better than the settings in
    # force, while the labels' own words (the learnt signal) fix every request.
    monkeypatch.setattr(
        fitting,
        "tune",
        lambda *a, **k: Tuned(changed, {"bm25_k1": 0.6}, {"changed": True}),
    )
    monkeypatch.setattr(Tuner, "matrix", lambda self, s, rows=None: base.copy())
    result = fit(
        [t.name for t in snap.tools], labels, base, tuner=tuner, settings=snap.settings
    )
    assert result.improves
    assert result.settings == {}
    assert result.cv["settings"]["changed"] is False
    assert "learnt ranking" in result.cv["settings"]["kept"]
