"""How far "no tool fits" can go on request kinds the calibration never saw, and
how much of MetaTool's ranking error is label noise (issue 33, session 15).

    .venv/bin/python bench/learning_bounds.py [--folds 5]

No tool fits (MetaTool): as bench/learning_notool.py, the dev set's no-tool
requests are cut into ``--folds`` kinds; for outer fold f, kind f is withheld
from the labels, and the learnt ranking (learning.fit's fusion of the engine's
scores and the learnt signal, weights and neighbour count chosen on the training
labels) scores fold f's single-tool requests and kind f's no-tool requests.
For each feature set, three ways to choose the gate:

* ``pooled``: the logistic model and cut chosen on the training labels, the
  no-tool ones held out by kind (3 inner kinds), the cut the highest whose
  pooled inner false-positive rate is <= 0.15 within 2 points of R@1 (today's
  learning.notool);
* ``worst``: the same model, the cut chosen so the WORST inner kind's rate is
  <= 0.15 (a conservative calibration), within the same R@1 loss;
* ``oracle``: the model fitted and the cut chosen on the withheld kind and the
  scored fold themselves: the lowest rate ANY logistic gate on these features
  reaches within 2 points of R@1. An upper bound, not a method;
* ``today, test cut, Np`` (today's features): the honest model (fitted on the
  training labels) with its cut chosen on the test itself, the lowest rate
  within N points of R@1: what a looser R@1 budget could buy at best.

Features: ``top`` and ``margin`` (the fused ranking's best score and its lead),
``no_tool_sim`` / ``tool_sim`` (the nearest labelled no-tool / tool request),
``length`` (the request's words), ``agree`` (whether the engine's label-free
first tool is the learnt ranking's first), ``near`` (the nearest labelled
request of either kind).

Label noise (MetaTool): pairs of dev requests at cosine >= 0.95 of each other
(near-duplicate texts) whose labels share no tool, and the best NDCG@10 any
ranking could reach on held-out fold requests that have such a twin in the
training labels.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import CACHE_DIR, EmbeddingCache, get_embedder  # noqa: E402
from bench.learning import SEED, engine_matrix, labelled  # noqa: E402
from bench.quality import prepare  # noqa: E402
from learning.fit import (  # noqa: E402
    FOLDS,
    K_CHOICES,
    Labelled,
    _learnt,
    build_signal,
    folds_of,
    held_out_by_k,
    relevance,
)
from learning.notool import choose_cut, fit_logistic, kinds_of, probability  # noqa: E402
from selection.engine.learnt import SIGNALS, fuse  # noqa: E402
from selection.engine.notool import FEATURES, score_features  # noqa: E402

MIN_SCORE = 0.05
FP_TARGET = 0.15
MAX_LOSS = 0.02
SETS: dict[str, tuple[str, ...]] = {
    "top": ("top",),
    "today": ("top", "margin", "no_tool_sim", "tool_sim"),
    "+length": ("top", "margin", "no_tool_sim", "tool_sim", "length"),
    "+agree": ("top", "margin", "no_tool_sim", "tool_sim", "agree"),
    "near,len,agree": ("top", "margin", "near", "length", "agree"),
}
BUDGETS = (0.02, 0.03, 0.05)
NAMES = ("top", "margin", "no_tool_sim", "tool_sim", "length", "agree", "near")


def fused_scores(
    names: Sequence[str],
    labels: list[Labelled],
    base: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The learnt ranking fitted on ``train`` (as learning.fit: inner-CV weights
    and k): held-out fused scores of the training labels, and the test's."""
    tl = [labels[i] for i in train]
    inner = folds_of(len(tl), FOLDS)
    named = np.array([bool(lab.tools) for lab in tl])
    rows = np.arange(len(tl))
    by_k = held_out_by_k(names, tl, inner, rows, K_CHOICES)
    rel = relevance(tl, rows[named], len(names))
    _, weights, k, signals = _learnt(base[train], named, rel, by_k)
    held = fuse(base[train], signals, weights)
    signal = build_signal("bounds", "", names, tl, weights, k)
    found = [signal.scores(labels[i].vector, labels[i].terms) for i in test]
    sigs = {n: np.array([f[n] for f in found]) for n in SIGNALS}
    return held, fuse(base[test], sigs, weights)


def features(
    fused: np.ndarray,
    base: np.ndarray,
    rows: np.ndarray,
    labels: list[Labelled],
    against: np.ndarray,
    kinds: np.ndarray | None = None,
) -> np.ndarray:
    """The feature matrix (``NAMES``) of requests ``rows`` against labels
    ``against``; with ``kinds`` (rows is against, a kind per no-tool label, -1
    for the others) a no-tool label is not compared with its own kind (as
    learning.notool holds no-tool labels out by kind)."""
    top, margin = score_features(fused)
    vecs = np.stack([labels[i].vector for i in rows])
    others = np.stack([labels[i].vector for i in against])
    none = np.array([not labels[i].tools for i in against])
    sims = vecs @ others.T
    same = rows[:, None] == against[None, :]
    sims[same] = -1.0  # never a label against itself
    if kinds is not None:
        sims[(kinds[:, None] == kinds[None, :]) & (kinds[:, None] >= 0)] = -1.0
    nsim = np.maximum(sims[:, none].max(axis=1, initial=0), 0)
    tsim = np.maximum(sims[:, ~none].max(axis=1, initial=0), 0)
    length = np.array([len(labels[i].text.split()) for i in rows], dtype=float)
    agree = (np.argmax(fused, axis=1) == np.argmax(base, axis=1)).astype(float)
    return np.column_stack(
        [top, margin, nsim, tsim, length, agree, np.maximum(nsim, tsim)]
    )


def gate(x: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    return x[:, [NAMES.index(n) for n in names]]


def fit(x: np.ndarray, y: np.ndarray) -> dict:
    return fit_logistic(x, y, FEATURES[: x.shape[1]])


def outcome(fused: np.ndarray, labels: list[Labelled], rows: np.ndarray) -> tuple:
    none = np.array([not labels[i].tools for i in rows])
    single = np.array([len(labels[i].tools) == 1 for i in rows])
    answered = fused.max(axis=1) >= MIN_SCORE
    right = np.array(
        [int(np.argmax(fused[j])) in labels[i].tools for j, i in enumerate(rows)]
    )
    return none, single, answered, right & answered


def cut_worst(p, none, single, answered, right, kinds) -> float:
    """The lowest cut (most gating) ... the highest cut whose worst inner kind's
    false-positive rate is <= FP_TARGET within the R@1 loss (else the one with
    the lowest worst rate)."""
    r1 = float(right[single].mean())
    best = (np.inf, 1.01)
    for cut in np.unique(p[(none | single) & answered])[::-1]:
        gated = p >= cut
        if r1 - float((right & ~gated)[single].mean()) > MAX_LOSS + 1e-12:
            break
        worst = max(
            float((answered & ~gated)[none & (kinds == k)].mean())
            for k in np.unique(kinds[none])
        )
        if worst < best[0] - 1e-12:
            best = (worst, float(cut))
        if worst <= FP_TARGET:
            break
    return best[1]


def no_tool(data, labels: list[Labelled], base: np.ndarray, folds: int) -> None:
    names = [s.name for s in data.specs]
    fold_of = folds_of(len(labels), folds, SEED)
    none_rows = np.array([i for i, lab in enumerate(labels) if not lab.tools])
    vecs = np.stack([labels[i].vector for i in none_rows]).astype(np.float64)
    kind = kinds_of(vecs / np.linalg.norm(vecs, axis=1, keepdims=True), folds)
    totals: dict[str, dict[str, list]] = {}
    ungated: list[bool] = []
    for f in range(folds):
        held = none_rows[kind == f]
        train = np.setdiff1d(np.flatnonzero(fold_of != f), held)
        single = np.array(
            [i for i in np.flatnonzero(fold_of == f) if len(labels[i].tools) == 1]
        )
        test = np.concatenate([held, single])
        held_fused, test_fused = fused_scores(names, labels, base, train, test)
        # training features: each training label against the others (a label's
        # no-tool twins of its own inner kind are not held out here: the
        # inner kinds are only for the cut).
        o_tr = outcome(held_fused, labels, train)
        o_te = outcome(test_fused, labels, test)
        inner_kind = np.full(len(train), -1)
        tr_none = np.flatnonzero(o_tr[0])
        tv = np.stack([labels[train[j]].vector for j in tr_none]).astype(np.float64)
        inner_kind[tr_none] = kinds_of(
            tv / np.linalg.norm(tv, axis=1, keepdims=True), 3
        )
        xtr = features(held_fused, base[train], train, labels, train, inner_kind)
        xte = features(test_fused, base[test], test, labels, train)
        ungated += list(o_te[3][o_te[1]])
        trained = o_tr[0] | o_tr[3]
        for label, cols in SETS.items():
            x1, x2 = gate(xtr, cols), gate(xte, cols)
            p = np.zeros(len(train))
            for k in range(3):  # out-of-kind probabilities for the no-tool labels
                out = inner_kind == k
                tool_fold = (inner_kind < 0) & (np.arange(len(train)) % 3 == k)
                part = out | tool_fold
                model = fit(x1[trained & ~part], o_tr[0][trained & ~part])
                p[part] = probability(model, x1[part])
            model = fit(x1[trained], o_tr[0][trained])
            pt = probability(model, x2)
            if label == "today":  # the honest model, its cut chosen on the test
                for budget in BUDGETS:
                    c = choose_cut(pt, *o_te, fp_target=0.0, max_loss=budget)["cut"]
                    g = pt >= c
                    slot = totals.setdefault(
                        f"today, test cut, {budget * 100:.0f}p", {"fp": [], "r1": []}
                    )
                    slot["fp"] += list((o_te[2] & ~g)[o_te[0]])
                    slot["r1"] += list((o_te[3] & ~g)[o_te[1]])
            cuts = {
                "pooled": choose_cut(p, *o_tr, fp_target=FP_TARGET, max_loss=MAX_LOSS)[
                    "cut"
                ],
                "worst": cut_worst(p, *o_tr, inner_kind),
            }
            tr_te = o_te[0] | o_te[3]
            oracle_model = fit(x2[tr_te], o_te[0][tr_te])
            po = probability(oracle_model, x2)
            found = choose_cut(po, *o_te, fp_target=0.0, max_loss=MAX_LOSS)
            for how, (prob, cut) in {
                "pooled": (pt, cuts["pooled"]),
                "worst": (pt, cuts["worst"]),
                "oracle": (po, found["cut"]),
            }.items():
                g = prob >= cut
                slot = totals.setdefault(f"{label} / {how}", {"fp": [], "r1": []})
                slot["fp"] += list((o_te[2] & ~g)[o_te[0]])
                slot["r1"] += list((o_te[3] & ~g)[o_te[1]])
        print(
            f"  kind {f}: {len(held)} withheld no-tool, {len(single)} single-tool",
            flush=True,
        )
    r1 = float(np.mean(ungated))
    print(
        f"\nno tool fits on withheld kinds (MetaTool); ungated single-tool R@1 {r1:.3f}"
    )
    print(f"  {'features / cut':<30} {'FP':>6} {'R@1':>6} {'loss':>6}")
    for key, slot in totals.items():
        fp, kept = float(np.mean(slot["fp"])), float(np.mean(slot["r1"]))
        print(f"  {key:<30} {fp:6.3f} {kept:6.3f} {100 * (r1 - kept):5.1f}p")


def label_noise(data, labels: list[Labelled], folds: int) -> None:
    """Held-out requests with near-duplicates in the training folds, and how
    many share no tool with any of them, at a few cosine bars; and tool pairs
    whose texts are near-duplicates."""
    fold_of = folds_of(len(labels), folds, SEED)
    rows = np.array([i for i, lab in enumerate(labels) if lab.tools])
    print(f"\nlabel noise (MetaTool, {len(rows)} requests with tools)")
    for bar in (0.95, 0.9, 0.85):
        clash = twins = 0
        examples = []
        for f in range(folds):
            test = rows[fold_of[rows] == f]
            train = rows[fold_of[rows] != f]
            left = np.stack([labels[i].vector for i in test])
            sims = left @ np.stack([labels[i].vector for i in train]).T
            for j, i in enumerate(test):
                near = train[sims[j] >= bar]
                if not len(near):
                    continue
                twins += 1
                mine = set(labels[i].tools)
                if all(not (mine & set(labels[t].tools)) for t in near):
                    clash += 1
                    examples.append(i)
        print(
            f"  cosine >= {bar}: {twins} held-out requests have a twin in the training"
            f" folds; {clash} ({clash / max(twins, 1):.1%}) share no tool with any twin"
        )
        for i in examples[:3]:
            tools = [data.specs[t].name for t in labels[i].tools]
            print(f"    {labels[i].text[:60]!r} -> {tools}")
    tv = data.tool_vecs / np.linalg.norm(data.tool_vecs, axis=1, keepdims=True)
    sims = np.triu(tv @ tv.T, 1)
    for bar in (0.9, 0.8):
        pairs = np.argwhere(sims >= bar)
        shown = ", ".join(
            f"{data.specs[a].name}~{data.specs[b].name}" for a, b in pairs[:5]
        )
        print(f"  tool pairs at cosine >= {bar}: {len(pairs)} (e.g. {shown})")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--skip-no-tool", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    data = prepare("metatool", None, EmbeddingCache(get_embedder()))
    cached = CACHE_DIR / "designs-metatool.npz"
    base = np.load(cached)["base"] if cached.exists() else engine_matrix(data)
    labels = labelled(data)
    label_noise(data, labels, args.folds)
    if not args.skip_no_tool:
        no_tool(data, labels, base, args.folds)


if __name__ == "__main__":
    main()
