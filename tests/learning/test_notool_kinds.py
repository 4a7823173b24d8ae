"""The "no tool fits" calibration holds no-tool labels out by kind of request
(learning.notool.by_kind), without a database: the kinds found are the groups
the requests come in; only no-tool labels change fold, each kind as a whole;
and when a catalog's no-tool requests come in tight kinds, the calibration's
held-out false-positive rate is the rate on a kind it never saw, not the
flattering rate on near-twins of its labels (issue 33: 0.141 on the dev folds,
0.340 on new requests)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import learning.notool
from learning.fit import Labelled, build_signal, fit
from learning.notool import MIN_SCORE, by_kind, kinds_of

DIM = 16
TOOLS = tuple(f"tool_{i}" for i in range(10))


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def directions(count: int, seed: int = 3) -> np.ndarray:
    return unit(np.random.default_rng(seed).normal(size=(count, DIM)))


def near(centre: np.ndarray, rng: np.random.Generator, spread: float) -> np.ndarray:
    return unit(centre + spread * rng.normal(size=DIM))


def test_the_kinds_found_are_the_groups_the_requests_come_in():
    rng = np.random.default_rng(0)
    centres = directions(3)
    truth = np.repeat(np.arange(3), 20)
    vectors = np.stack([near(centres[t], rng, 0.1) for t in truth])
    found = kinds_of(vectors, 3)
    # The same partition up to the names of the kinds.
    pairs = {(int(t), int(k)) for t, k in zip(truth, found, strict=True)}
    assert len(pairs) == 3
    assert len({k for _, k in pairs}) == 3
    assert np.array_equal(kinds_of(vectors, 3), found)  # deterministic


def test_only_no_tool_labels_change_fold_and_each_kind_moves_whole():
    rng = np.random.default_rng(1)
    centres = directions(4)
    labels = [Labelled(near(centres[0], rng, 0.3), {}, "t", (0,)) for _ in range(30)]
    labels += [
        Labelled(near(centres[1 + n % 3], rng, 0.05), {}, "chat", ()) for n in range(30)
    ]
    folds = np.arange(60) % 3
    moved = by_kind(labels, folds)
    assert np.array_equal(moved[:30], folds[:30])
    assert moved[30:].min() > folds.max()
    for kind in range(3):  # every request of one kind has one fold
        assert len(set(moved[30 + kind :: 3].tolist())) == 1
    assert len(set(moved[30:].tolist())) == 3


def kinds_catalog(
    seed: int, kinds: int, per_kind: int, tools: int = 240
) -> tuple[list[Labelled], np.ndarray]:
    """Tool requests near their tool; no-tool requests in ``kinds`` tight kinds
    (near-twins within a kind, unrelated across kinds); every request's best
    engine score alike (0.3-0.6), so only the similarities tell them apart."""
    rng = np.random.default_rng(seed)
    tool_dirs = directions(len(TOOLS), seed=5)
    kind_dirs = directions(kinds, seed=7)
    labels, rows = [], []
    for n in range(tools + kinds * per_kind):
        scores = rng.uniform(0.0, 0.2, size=len(TOOLS))
        if n < tools:
            tool = int(rng.integers(len(TOOLS)))
            labels.append(Labelled(near(tool_dirs[tool], rng, 0.35), {}, "t", (tool,)))
            scores[tool] = rng.uniform(0.3, 0.6)
        else:
            kind = (n - tools) % kinds
            labels.append(Labelled(near(kind_dirs[kind], rng, 0.08), {}, "chat", ()))
            scores[int(rng.integers(len(TOOLS)))] = rng.uniform(0.3, 0.6)
        rows.append(scores)
    return labels, np.array(rows)


def new_kind_fp(result, labels: list[Labelled], seed: int) -> float:
    """FP of the fitted decision on requests of a kind absent from ``labels``."""
    rng = np.random.default_rng(seed)
    centre = directions(9, seed=11)[0]
    signal = build_signal("m", "", TOOLS, labels, result.weights, result.k)
    signal = replace(signal, no_tool_decision=result.no_tool)
    offered = []
    for _ in range(80):
        scores = rng.uniform(0.0, 0.2, size=len(TOOLS))
        scores[int(rng.integers(len(TOOLS)))] = rng.uniform(0.3, 0.6)
        vector = near(centre, rng, 0.08)
        decided = signal.decide_no_tool(vector, scores) if result.no_tool else None
        offered.append(scores.max() >= MIN_SCORE and decided is None)
    return float(np.mean(offered))


def test_the_calibrated_rate_is_the_rate_on_a_kind_never_seen():
    labels, base = kinds_catalog(2, kinds=4, per_kind=30)
    result = fit(TOOLS, labels, base)
    report = result.cv["no_tool"]["learnt"]
    unseen = new_kind_fp(result, labels, seed=2)
    assert unseen > 0.5  # a new kind of chit-chat is not gated
    # The learn report does not promise what a new kind will not get.
    assert report["fp"] >= unseen - 0.25  # at random: 0.15 against 1.0


def test_held_out_at_random_the_same_catalog_flatters_the_calibration(monkeypatch):
    """The failure the kinds fix: near-twins in the training folds make the
    held-out rate look met while a new kind gets through."""
    monkeypatch.setattr(learning.notool, "HOLD_OUT_BY_KIND", False)
    labels, base = kinds_catalog(2, kinds=4, per_kind=30)
    result = fit(TOOLS, labels, base)
    report = result.cv["no_tool"]["learnt"]
    assert report["fp"] <= 0.15
    assert new_kind_fp(result, labels, seed=2) > report["fp"] + 0.3


def test_the_learn_report_says_when_the_target_is_out_of_reach():
    labels, base = kinds_catalog(2, kinds=4, per_kind=30)
    report = fit(TOOLS, labels, base).cv["no_tool"]["learnt"]
    assert report["held_out"] == "by kind"
    assert report["fp"] > report["fp_target"]
    assert report["fp_target_met"] is False
    assert "above the target" in report["note"]
