"""Learning a catalog's ranking from its accepted labels (pure numpy, no Django).

``fit`` turns labelled requests into a learnt model (the examples behind
selection.engine.learnt, fusion weights, a "no tool fits" threshold). Every number it
reports is cross-validated, and if the learnt ranking is not better than the engine
alone on held-out labels it proposes no change: learning never makes a catalog worse.
The engine's own scores come from the caller, so the bench and the app fit the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from learning.metrics import ndcg_at_10
from learning.notool import MIN_NO_TOOL, fit_decision
from learning.tuning import Tuner, tune
from selection.engine.learnt import SIGNALS, LearntSignal, fuse
from selection.engine.settings import EngineSettings

FOLDS = 3
SEED = 20261126
GRID = (0.0, 0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
K_CHOICES = (5, 10, 20, 40)
# Below this many labels with tools a fit is too noisy to trust.
MIN_LABELS = 8
# "No tool fits": the highest false-positive rate to aim for, and how much of
# the single-tool R@1 the threshold may cost.
FP_TARGET = 0.15
MAX_R1_LOSS = 0.015
# The learnt signal is used only if it beats the engine alone by more than this
# on held-out folds (as the settings tuner's margin): a gain of 0.0001-0.002 on
# three inner folds is noise, and on Seal-Tools such fits lost on the outer fold.
NEVER_WORSE_MARGIN = 0.002
# ... and by more than this many standard errors of the mean per-label gain (the
# paired differences on the held-out folds): on StableToolBench (300 labels)
# inner gains of 0.0036-0.0052, twice the margin, lost 0.0025 on the outer folds.
NEVER_WORSE_ERRORS = 2.0


@dataclass(frozen=True)
class Labelled:
    """One labelled request: its unit vector, weighted terms, text and tool rows
    (empty: no tool fits)."""

    vector: np.ndarray
    terms: Mapping[str, float]
    text: str
    tools: tuple[int, ...]


@dataclass
class FitResult:
    """What a fit found, all measured on held-out folds of the labels."""

    weights: dict[str, float]
    k: int
    no_tool_threshold: float | None
    improves: bool
    cv: dict[str, Any] = field(default_factory=dict)
    # The learnt "no tool fits" decision (learning.notool), when there is one.
    no_tool: dict[str, Any] | None = None
    # Engine settings fitted to the labels (learning.tuning), as a patch of the
    # settings in force (empty: keep them).
    settings: dict[str, Any] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        """The JSON a learnt model stores."""
        return {
            "weights": self.weights,
            "k": self.k,
            "no_tool_threshold": self.no_tool_threshold,
            "no_tool": self.no_tool,
            "settings": self.settings,
        }


def build_signal(
    model_id: str,
    embedding_model: str,
    tools: Sequence[str],
    labels: Sequence[Labelled],
    weights: Mapping[str, float] | None = None,
    k: int = 10,
) -> LearntSignal:
    """The engine's learnt signal from ``labels`` (tool rows index ``tools``)."""
    dim = len(labels[0].vector) if labels else 0
    matrix = (
        np.stack([lab.vector for lab in labels]).astype(np.float32)
        if labels
        else np.zeros((0, dim), dtype=np.float32)
    )
    return LearntSignal(
        model_id=model_id,
        embedding_model=embedding_model,
        tools=tuple(tools),
        examples=matrix,
        example_tools=tuple(tuple(lab.tools) for lab in labels),
        texts=tuple(lab.text for lab in labels),
        weights=dict(weights or {}),
        k=k,
    )


def folds_of(count: int, folds: int, seed: int = SEED) -> np.ndarray:
    """A fold number per item, fixed by ``seed``."""
    order = np.random.default_rng(seed).permutation(count)
    out = np.empty(count, dtype=np.int64)
    out[order] = np.arange(count) % folds
    return out


def held_out_signals(
    tools: Sequence[str],
    labels: Sequence[Labelled],
    folds: np.ndarray,
    rows: np.ndarray,
    k: int,
) -> dict[str, np.ndarray]:
    """Each signal for the labels ``rows``, from a signal built without their fold."""
    return held_out_by_k(tools, labels, folds, rows, (k,))[k]


def held_out_by_k(
    tools: Sequence[str],
    labels: Sequence[Labelled],
    folds: np.ndarray,
    rows: np.ndarray,
    ks: Sequence[int],
) -> dict[int, dict[str, np.ndarray]]:
    """``held_out_signals`` for several neighbour counts, each fold's signal built
    once (only ``knn`` depends on the count)."""
    shape = (len(rows), len(tools))
    # Only ``knn`` differs between the counts: the other signals' arrays are shared.
    shared = {name: np.zeros(shape) for name in SIGNALS if name != "knn"}
    out = {k: {**shared, "knn": np.zeros(shape)} for k in ks}
    for fold in np.unique(folds[rows]):
        train = [labels[int(i)] for i in np.flatnonzero(folds != fold)]
        signal = build_signal("cv", "", tools, train, k=ks[0])
        others = {k: signal.with_weights({}, k) for k in ks[1:]}
        for j, i in enumerate(rows):
            if folds[i] != fold:
                continue
            lab = labels[int(i)]
            found = signal.scores(lab.vector, lab.terms)
            for name in SIGNALS:
                out[ks[0]][name][j] = found[name]
            for k, other in others.items():
                out[k]["knn"][j] = other.scores(lab.vector, lab.terms, ("knn",))["knn"]
    return out


def relevance(labels: Sequence[Labelled], rows: np.ndarray, n: int) -> np.ndarray:
    """A (labels x tools) boolean matrix of the expected tools."""
    rel = np.zeros((len(rows), n), dtype=bool)
    for j, i in enumerate(rows):
        rel[j, list(labels[i].tools)] = True
    return rel


class Fusions:
    """NDCG@10 per row of ``fuse(base, signals, weights)`` for many weights, the
    same as on every tool but computed on each row's few candidates: the tools in
    the top ``width`` of the base or of any signal, and the expected tools.

    The weights are never negative, so a tool outside a row's candidates scores
    at most the fusion of each input's highest value outside them. A row whose
    tenth best candidate beats that bound (or whose bound is 0: zero scores
    never rank) ranks its top ten among the candidates; any other row is fused
    over every tool. The weight search fuses hundreds of times, and a fusion over
    the candidates costs a small fraction of one over every tool."""

    def __init__(
        self,
        base: np.ndarray,
        signals: Mapping[str, np.ndarray],
        rel: np.ndarray,
        width: int = 30,
    ) -> None:
        self.base, self.signals, self.rel = base, signals, rel
        inputs = [base, *(signals[name] for name in SIGNALS)]
        rows, tools = base.shape
        self.pruned = tools > 4 * width
        if not self.pruned:
            return
        tops = [np.argpartition(-x, width, axis=1)[:, :width] for x in inputs]
        picked = [
            np.unique(np.concatenate([t[r] for t in tops] + [np.flatnonzero(rel[r])]))
            for r in range(rows)
        ]
        wide = max(len(p) for p in picked)
        cols = np.full((rows, wide), tools)  # padding: an all-zero extra column
        for r, p in enumerate(picked):
            cols[r, : len(p)] = p
        # The most each input gives a tool outside a row's candidates.
        outside = np.ones((rows, tools + 1), dtype=bool)
        np.put_along_axis(outside, cols, False, axis=1)
        outside = outside[:, :tools]
        self.outside = np.stack(
            [np.where(outside, x, 0.0).max(axis=1) for x in inputs], axis=1
        )

        def narrow(x: np.ndarray) -> np.ndarray:
            padded = np.concatenate([x, np.zeros((rows, 1), dtype=x.dtype)], axis=1)
            return np.take_along_axis(padded, cols, axis=1)

        self.cbase = narrow(base)
        self.csignals = {name: narrow(signals[name]) for name in SIGNALS}
        self.crel = narrow(rel)

    def ndcg(self, weights: Mapping[str, float]) -> np.ndarray:
        if not self.pruned:
            return ndcg_at_10(fuse(self.base, self.signals, weights), self.rel)
        fused = fuse(self.cbase, self.csignals, weights)
        out = ndcg_at_10(fused, self.crel)
        w = np.array([1.0, *(float(weights.get(n, 0.0)) for n in SIGNALS)])
        bound = self.outside @ w / w.sum()
        k = min(10, fused.shape[1])
        tenth = -np.partition(-fused, k - 1, axis=1)[:, k - 1]
        unsure = np.flatnonzero((tenth <= bound) & (bound > 0))
        if len(unsure):
            signals = {name: s[unsure] for name, s in self.signals.items()}
            full = fuse(self.base[unsure], signals, weights)
            out[unsure] = ndcg_at_10(full, self.rel[unsure])
        return out


def search_weights(
    base: np.ndarray, signals: Mapping[str, np.ndarray], rel: np.ndarray
) -> tuple[dict[str, float], float]:
    """Coordinate ascent over ``GRID`` per signal (two passes): the weights with
    the best mean held-out NDCG@10."""
    fusions = Fusions(base, signals, rel)
    weights = dict.fromkeys(SIGNALS, 0.0)
    best = float(ndcg_at_10(base, rel).mean())
    for _ in range(2):
        moved = False
        for name in SIGNALS:
            for value in GRID:
                trial = {**weights, name: value}
                score = float(fusions.ndcg(trial).mean())
                if score > best + 1e-6:
                    best, weights, moved = score, trial, True
        if not moved:
            break
    return weights, best


def fit(
    tools: Sequence[str],
    labels: Sequence[Labelled],
    base: np.ndarray,
    sample: np.ndarray | None = None,
    folds: int = FOLDS,
    tuner: Tuner | None = None,
    settings: EngineSettings | None = None,
) -> FitResult:
    """Engine settings, fusion weights, neighbour count and no-tool threshold
    for ``labels``.

    ``base[j]`` holds the engine's scores for label ``sample[j]`` (all labels
    when ``sample`` is None); only those labels are scored, every label is an
    example. With a ``tuner`` over the same labels (``tuner.parts[j]`` is label
    ``sample[j]``) and the ``settings`` in force, the engine's settings are
    fitted first (learning.tuning) and the learnt signal is fitted on top of
    the ranking they give."""
    rows = np.arange(len(labels)) if sample is None else np.asarray(sample)
    named = np.array([bool(labels[int(i)].tools) for i in rows])
    if int(named.sum()) < MIN_LABELS:
        return FitResult({}, 0, None, False, {"reason": "too few labels"})
    fold_of = folds_of(len(labels), folds)
    rel = relevance(labels, rows[named], len(tools))
    engine_before = float(ndcg_at_10(base[named], rel).mean())
    by_k = held_out_by_k(tools, labels, fold_of, rows, K_CHOICES)
    before = engine_before
    after, weights, k, signals = _learnt(base, named, rel, by_k)
    patch: dict[str, Any] = {}
    tuned_report: dict[str, Any] = {"reason": "no tuner"}
    if tuner is not None and settings is not None:
        tuned = tune(tuner, settings, relevance(labels, rows, len(tools)))
        tuned_report = tuned.report
        if tuned.patch:
            # The settings stay only if the learnt ranking on top of them is
            # better on held-out folds too (the learnt signal may have fixed
            # what the settings fix, and better).
            other = tuner.matrix(tuned.settings)
            other_before = float(ndcg_at_10(other[named], rel).mean())
            found = _learnt(other, named, rel, by_k)
            if max(found[0], other_before) > max(after, before):
                patch, base, before = tuned.patch, other, other_before
                after, weights, k, signals = found
            else:
                tuned_report = {
                    **tuned_report,
                    "changed": False,
                    "kept": "the learnt ranking is better on the settings in force",
                }
    gain, error = paired_gain(base, signals, weights, named, rel)
    improves = gain > max(NEVER_WORSE_MARGIN, NEVER_WORSE_ERRORS * error)
    fused = fuse(base, signals, weights) if improves else base
    threshold, no_tool = calibrate_threshold(fused, labels, rows)
    decision, no_tool["learnt"] = fit_decision(fused, labels, rows, fold_of)
    cv = {
        "folds": folds,
        "labels": len(labels),
        "scored": int(named.sum()),
        "ndcg_engine": round(engine_before, 4),
        "settings": tuned_report,
        "ndcg_before": round(before, 4),
        "ndcg_after": round(after if improves else before, 4),
        "ndcg_learnt": round(after, 4),
        "delta": round((after - before) if improves else 0.0, 4),
        "gain_error": round(error, 4),
        "no_tool": no_tool,
    }
    if decision is not None:  # the learnt decision replaces the threshold
        threshold = None
    result = FitResult(weights if improves else {}, k, threshold, improves, cv)
    result.no_tool = decision
    result.settings = patch
    return result


def paired_gain(
    base: np.ndarray,
    signals: Mapping[str, np.ndarray],
    weights: Mapping[str, float],
    named: np.ndarray,
    rel: np.ndarray,
) -> tuple[float, float]:
    """The mean held-out NDCG@10 gain of the learnt fusion over ``base`` per
    label that names a tool, and its standard error (0 with fewer than 2)."""
    if not any(w > 0 for w in weights.values()):
        return 0.0, 0.0
    rows = {name: s[named] for name, s in signals.items()}
    diff = ndcg_at_10(fuse(base[named], rows, weights), rel) - ndcg_at_10(
        base[named], rel
    )
    if len(diff) < 2:
        return float(diff.mean()) if len(diff) else 0.0, 0.0
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(len(diff)))


def _learnt(
    base: np.ndarray,
    named: np.ndarray,
    rel: np.ndarray,
    by_k: Mapping[int, dict[str, np.ndarray]],
) -> tuple[float, dict[str, float], int, dict[str, np.ndarray]]:
    """The best held-out NDCG@10 of the learnt signal fused with ``base``, and
    its weights, neighbour count and signals."""
    best: tuple[float, dict[str, float], int, dict[str, np.ndarray]] = (-1, {}, 0, {})
    every = bool(named.all())  # no copies then (a matrix is rows x tools)
    for k in K_CHOICES:
        signals = by_k[k]
        named_signals = {name: s if every else s[named] for name, s in signals.items()}
        weights, score = search_weights(
            base if every else base[named], named_signals, rel
        )
        if score > best[0]:
            best = (score, weights, k, signals)
    return best


def calibrate_threshold(
    fused: np.ndarray, labels: Sequence[Labelled], rows: np.ndarray
) -> tuple[float | None, dict[str, Any]]:
    """The lowest top-score threshold whose held-out no-tool false-positive rate
    is at most ``FP_TARGET`` and that keeps single-tool R@1 within
    ``MAX_R1_LOSS``; when both cannot hold, the highest threshold within the
    loss. None with fewer than ``MIN_NO_TOOL`` labelled no-tool requests, as
    for the learnt decision: the catalog's threshold holds."""
    none = np.array([not labels[i].tools for i in rows], dtype=bool)
    single = np.array([len(labels[i].tools) == 1 for i in rows], dtype=bool)
    if not none.any() or not single.any():
        return None, {"reason": "no labelled no-tool requests"}
    if int(none.sum()) < MIN_NO_TOOL:
        return None, {"reason": "too few labelled no-tool requests"}
    top = fused.max(axis=1)
    right = np.array(
        [
            int(np.argmax(fused[j])) in labels[i].tools and fused[j].max() > 0
            for j, i in enumerate(rows)
        ]
    )
    r1 = float(right[single].mean())
    best: tuple[float, float, float] = (0.0, float((top[none] > 0).mean()), r1)
    for t in np.unique(np.round(top[none | single], 4)):
        fp = float((top[none] >= t).mean())
        kept = float((right[single] & (top[single] >= t)).mean())
        if r1 - kept > MAX_R1_LOSS:
            break
        best = (float(t), fp, kept)
        if fp <= FP_TARGET:
            break
    report = {
        "threshold": round(best[0], 4),
        "fp": round(best[1], 4),
        "r1_before": round(r1, 4),
        "r1_after": round(best[2], 4),
    }
    return round(best[0], 4), report
