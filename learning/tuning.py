"""Fitting the engine's own settings to a catalog's labels (pure, no Django).

The learnt signal speaks only for labelled tools; the engine's settings
(``hybrid_weights``, ``field_weights``, ``bm25_k1``) speak for every tool. ``tune``
chooses them cross-validated, and proposes a change only when the held-out scores
beat the settings in force. The search never re-runs the engine: ``parts_of`` takes
the hybrid scorer's inputs that do not depend on these settings once per label, and
``Tuner.matrix`` recombines them as ``selection.engine.scorers.hybrid`` does
(tests/learning/test_tuning.py holds the two equal). docs/explanation/learning.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from learning.metrics import ndcg_at_10
from selection.engine.deadline import Deadline
from selection.engine.diversity import diversified, several_sentences
from selection.engine.fusion import (
    CatalogFusion,
    hybrid_weights,
    measure,
    pulled,
    request_scale,
)
from selection.engine.index import LexicalIndex
from selection.engine.normalize import NormalizedQuery, normalize
from selection.engine.policy import policy_codes
from selection.engine.scorers import lexical
from selection.engine.scorers.base import ScoreContext
from selection.engine.scorers.hybrid import _without_vector, pool_cosine
from selection.engine.scorers.simple import semantic_confidence
from selection.engine.settings import EngineSettings
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import SelectionRequest

TUNE_FOLDS = 3
TUNE_SAMPLE = 300
SEED = 20261127
# A change must beat the settings in force on held-out labels by this much.
MARGIN = 0.002
PASSES = 2
# The values the search tries for each setting (the current value is always one).
# A wider grid (BM25 b, lexical floors, the name field, lower embed and k1)
# chose worse on held-out Seal-Tools labels: 300 labels overfit it.
GRID: dict[tuple[str, str | None], tuple[float, ...]] = {
    ("field_weights", "params"): (0.5, 1.0, 2.0, 3.0, 5.0),
    ("field_weights", "description"): (1.0, 2.0, 3.0),
    ("bm25_k1", None): (0.6, 1.2),
    ("hybrid_weights", "embed"): (0.3, 0.6, 1.0),
    ("hybrid_weights", "lexical"): (0.1, 0.3, 0.6, 1.0),
    ("hybrid_weights", "bm25f"): (0.1, 0.25, 0.5, 1.0),
    ("hybrid_weights", "name"): (0.0, 0.1, 0.3),
    ("hybrid_weights", "tag"): (0.0, 0.1, 0.3),
}
LEXICAL = ("field_weights", "bm25_k1", "bm25_b")
HYBRID_PARTS = ("embed", "lexical", "tag", "name")


@dataclass(frozen=True)
class LabelParts:
    """What the hybrid scorer needs for one labelled request, minus BM25F."""

    query: NormalizedQuery
    allowed: np.ndarray
    pool: np.ndarray
    missing: np.ndarray
    confidence: float
    semantic: bool
    signals: Mapping[str, np.ndarray]
    # A request of several sentences (its top tools are diversified).
    several: bool = False


def parts_of(
    snapshot: CatalogSnapshot,
    request: SelectionRequest,
    semantic: Mapping[str, float] | None,
) -> LabelParts:
    """The hybrid scorer's settings-free inputs for ``request``, as /select
    computes them for the same snapshot and semantic pool."""
    query = normalize(request)
    codes = policy_codes(snapshot, request)
    ctx = ScoreContext(
        snapshot, query, request, codes == 0, Deadline(None), semantic, None
    )
    index = snapshot.index
    pool = np.zeros(ctx.n, dtype=bool)
    if semantic is not None:
        pool[[snapshot.by_name[n] for n in semantic if n in snapshot.by_name]] = True
    return LabelParts(
        query=query,
        allowed=ctx.allowed,
        pool=pool,
        missing=_without_vector(ctx),
        confidence=semantic_confidence(ctx) if semantic is not None else 1.0,
        semantic=semantic is not None,
        several=several_sentences(query.embed_text),
        signals={
            "embed": pool_cosine(ctx).astype(np.float32),
            "lexical": lexical.keyword(index, query).astype(np.float32),
            "tag": lexical.field_coverage(index, query, "tags").astype(np.float32),
            "name": lexical.field_coverage(index, query, "name").astype(np.float32),
        },
    )


def tunable(settings: EngineSettings) -> bool:
    """Whether ``Tuner.matrix`` reproduces the engine under these settings: the
    hybrid scorer without its category weight or lexical-overlap filter."""
    return (
        settings.default_scorer == "hybrid"
        and settings.hybrid_weight("category") == 0
        and settings.min_lexical_overlap == 0
    )


@dataclass
class Tuner:
    """The labelled requests' hybrid inputs over one snapshot's tools, stacked
    (one row per label)."""

    snapshot: CatalogSnapshot
    parts: Sequence[LabelParts]
    _raw: dict[Any, np.ndarray] = field(default_factory=dict)
    _stacked: dict[str, np.ndarray] = field(default_factory=dict)
    _indexes: dict[Any, LexicalIndex] = field(default_factory=dict)
    _fusions: dict[Any, CatalogFusion] = field(default_factory=dict)
    _tokens: LexicalIndex | None = None

    def __post_init__(self) -> None:
        n = len(self.snapshot.tools)
        for name in HYBRID_PARTS:
            self._stacked[name] = (
                np.stack([p.signals[name] for p in self.parts])
                if self.parts
                else np.zeros((0, n), dtype=np.float32)
            )
        for name in ("allowed", "pool", "missing"):
            self._stacked[name] = (
                np.stack([getattr(p, name) for p in self.parts])
                if self.parts
                else np.zeros((0, n), dtype=bool)
            )
        self._stacked["confidence"] = np.array([p.confidence for p in self.parts])
        self._stacked["semantic"] = np.array([p.semantic for p in self.parts])

    def _bm25f(self, settings: EngineSettings, rows: np.ndarray) -> np.ndarray:
        """Raw BM25F coverage of the labels ``rows`` under the lexical settings
        (cached)."""
        key = (*_lexical_key(settings), rows.tobytes())
        if key not in self._raw:
            index = self._index(settings, key[:3])
            self._raw[key] = np.stack(
                [lexical.bm25f(index, self.parts[int(i)].query) for i in rows]
            ).astype(np.float32)
        return self._raw[key]

    def _index(self, settings: EngineSettings, key: Any) -> LexicalIndex:
        """The lexical index under ``settings`` (cached per lexical setting)."""
        if key not in self._indexes:
            if self._tokens is None:  # tokenised once; each setting reweighs it
                s = self.snapshot.settings
                self._tokens = LexicalIndex(
                    self.snapshot.tools,
                    s.field_weights,
                    s.bm25_k1,
                    s.bm25_b,
                    keep_tokens=True,
                )
            self._indexes[key] = self._tokens.reweighted(
                settings.field_weights, settings.bm25_k1, settings.bm25_b
            )
        return self._indexes[key]

    def fusion(self, settings: EngineSettings) -> CatalogFusion:
        """The catalog's fusion as the engine measures it under ``settings``'
        lexical index (the snapshot's own when they are the same)."""
        key = _lexical_key(settings)
        if key == _lexical_key(self.snapshot.settings):
            return self.snapshot.fusion
        if key not in self._fusions:
            index = self._index(settings, key)
            snap = self.snapshot
            self._fusions[key] = measure(snap.tools, index, snap.vectors)
        return self._fusions[key]

    def matrix(
        self, settings: EngineSettings, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """The hybrid scorer's scores (labels x tools) under ``settings``, 0 for
        tools it would not rank: selection.engine.scorers.hybrid.hybrid, one
        row per label."""
        s = settings
        rows = np.arange(len(self.parts)) if rows is None else np.asarray(rows)
        st = {k: v[rows] for k, v in self._stacked.items()}
        raw = self._bm25f(settings, rows).astype(np.float64)
        allowed, missing = st["allowed"], st["missing"]
        candidates = (allowed & (raw > 0)) | st["pool"]
        best = np.where(candidates, raw, 0.0).max(axis=1, initial=0.0)
        yardstick = np.maximum(best, s.lexical_floor)[:, None]
        signals = {**st, "bm25f": np.minimum(raw / yardstick, 1.0)}
        fusion = self.fusion(s)
        weights: dict[str, Any] = hybrid_weights(s, fusion)
        # Per label: the engine scales the catalog's BM25F weight by its length.
        terms = [len(self.parts[int(i)].query.terms) for i in rows]
        scales = np.array([request_scale(t) for t in terms])[:, None]
        if s.auto_fusion and fusion.lexical_weight is not None:
            weights["bm25f"] = weights["bm25f"] * scales
        embed = np.where(st["semantic"], weights["embed"], 0.0)[:, None]
        embed = np.where(missing, 0.0, embed)
        combined = embed * signals["embed"]
        total = embed + sum(w for k, w in weights.items() if k != "embed")
        for key, weight in weights.items():
            if key != "embed" and np.any(weight):
                combined = combined + weight * signals[key]
        fused = np.divide(combined, total, out=np.zeros_like(combined), where=total > 0)
        fused += pulled(fused, candidates & allowed, fusion, s.family_pull)
        span = max(s.lexical_confidence_ceiling - s.lexical_confidence_floor, 1e-6)
        lex_conf = np.clip((raw - s.lexical_confidence_floor) / span, 0.0, 1.0)
        factor = np.maximum(st["confidence"][:, None], lex_conf)
        factor = np.where(missing, 1.0, factor)
        scores: np.ndarray = np.where(candidates & allowed, fused * factor, 0.0)
        self._diversify(s, scores, rows, candidates & allowed)
        if s.min_combined_score > 0:
            scores[(scores > 0) & (scores < s.min_combined_score)] = 0.0
        return scores

    def _diversify(
        self, s: EngineSettings, scores: np.ndarray, rows: np.ndarray, mask: np.ndarray
    ) -> None:
        """Re-order the rows of requests of several sentences in place, as the
        hybrid scorer does (selection.engine.diversity)."""
        for j, i in enumerate(rows):
            if self.parts[int(i)].several:
                moved = diversified(
                    scores[j], mask[j], self.snapshot.vectors, s.diversity
                )
                if moved is not None:
                    scores[j] = moved


def _lexical_key(settings: EngineSettings) -> tuple[Any, ...]:
    """What a lexical index is built from, besides the tools."""
    return (
        tuple(sorted(settings.field_weights.items())),
        settings.bm25_k1,
        settings.bm25_b,
    )


def with_value(
    settings: EngineSettings, key: tuple[str, str | None], value: float
) -> EngineSettings:
    """``settings`` with one setting (or one weight of a mapping) changed."""
    name, sub = key
    changes: dict[str, Any] = {name: value}
    if sub is not None:
        changes[name] = {**getattr(settings, name), sub: value}
    return replace(settings, **changes)


def value_of(settings: EngineSettings, key: tuple[str, str | None]) -> float:
    """One setting (or one weight of a mapping) as a number."""
    name, sub = key
    if sub is None:
        return float(getattr(settings, name))
    return float(getattr(settings, name).get(sub, 0.0))


def patch_between(old: EngineSettings, new: EngineSettings) -> dict[str, Any]:
    """The settings that differ, as a JSON patch (mappings whole)."""
    a, b = old.to_dict(), new.to_dict()
    return {k: b[k] for k in b if a.get(k) != b[k]}


def _key(settings: EngineSettings) -> tuple[Any, ...]:
    fixed = (settings.auto_fusion, settings.family_pull, settings.diversity)
    return (*fixed, *(value_of(settings, k) for k in GRID))


def materialised(settings: EngineSettings, fusion: CatalogFusion) -> EngineSettings:
    """Where the search starts: the catalog's chosen BM25F weight written into
    ``hybrid_weights`` (as for a request of 15 content words or more) and
    ``auto_fusion`` off, so that the search can move it: labels are better
    evidence than the catalog's label-free choice. A change is still proposed
    only when it beats the settings in force (auto) on held-out labels."""
    if not settings.auto_fusion:
        return settings
    chosen = hybrid_weights(settings, fusion)["bm25f"]
    weights = {**settings.hybrid_weights, "bm25f": chosen}
    return replace(settings, auto_fusion=False, hybrid_weights=weights)


@dataclass
class Search:
    """Coordinate ascent over ``GRID``, per-label NDCG@10 cached per settings
    (so searches on different folds share their evaluations)."""

    tuner: Tuner
    rows: np.ndarray
    rel: np.ndarray
    _ndcg: dict[tuple[Any, ...], np.ndarray] = field(default_factory=dict)

    def ndcg(self, settings: EngineSettings) -> np.ndarray:
        key = _key(settings)
        if key not in self._ndcg:
            scores = self.tuner.matrix(settings, self.rows)
            self._ndcg[key] = ndcg_at_10(scores, self.rel)
        return self._ndcg[key]

    def best(self, start: EngineSettings, on: np.ndarray) -> EngineSettings:
        """The settings coordinate ascent reaches from ``start`` scoring only the
        labels ``on`` (positions in ``rows``)."""
        current = start
        score = float(self.ndcg(current)[on].mean())
        for _ in range(PASSES):
            moved = False
            for key, values in GRID.items():
                for value in values:
                    trial = with_value(current, key, value)
                    if trial.validate():
                        continue
                    found = float(self.ndcg(trial)[on].mean())
                    if found > score + 1e-6:
                        current, score, moved = trial, found, True
            if not moved:
                break
        return current


@dataclass
class Tuned:
    """A tuning's outcome: the settings to use and the held-out evidence."""

    settings: EngineSettings
    patch: dict[str, Any]
    report: dict[str, Any]


def tune(
    tuner: Tuner,
    settings: EngineSettings,
    rel: np.ndarray,
    folds: int = TUNE_FOLDS,
    sample: int = TUNE_SAMPLE,
) -> Tuned:
    """Settings fitted on the labels (``rel``: one row per ``tuner`` label, the
    expected tools); ``settings`` unchanged unless the search beats them on
    held-out folds by more than ``MARGIN``."""
    named = np.flatnonzero(rel.any(axis=1))
    if not tunable(settings) or len(named) < 2 * folds:
        return Tuned(settings, {}, {"reason": "settings not tunable or too few"})
    rng = np.random.default_rng(SEED)
    rows = np.sort(rng.permutation(named)[:sample])
    search = Search(tuner, rows, rel[rows])
    fold_of = np.arange(len(rows)) % folds
    rng.shuffle(fold_of)
    held = np.zeros(len(rows))
    start = materialised(settings, tuner.fusion(settings))
    for f in range(folds):
        chosen = search.best(start, np.flatnonzero(fold_of != f))
        test = np.flatnonzero(fold_of == f)
        held[test] = search.ndcg(chosen)[test]
    before = float(search.ndcg(settings).mean())
    after = float(held.mean())
    report = {
        "labels": len(rows),
        "ndcg_before": round(before, 4),
        "ndcg_tuned": round(after, 4),
        "delta": round(after - before, 4),
        "tried": len(search._ndcg),
    }
    if after <= before + MARGIN:
        return Tuned(settings, {}, {**report, "changed": False})
    final = search.best(start, np.arange(len(rows)))
    if float(search.ndcg(final).mean()) <= before:
        # The folds' choices won, the one fitted on every label does not even
        # rank them better (e.g. the catalog's own choice written out, which
        # would only turn ``auto_fusion`` off): nothing to propose.
        return Tuned(settings, {}, {**report, "changed": False})
    patch = patch_between(settings, final)
    return Tuned(final, patch, {**report, "changed": bool(patch), "patch": patch})
