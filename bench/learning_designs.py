"""Offline comparison of fusion designs for the learnt ranking (issue 33, "with
history"), on the outer folds of bench/learning.py, without the engine pass per
fold: the engine's label-free scores (``base``, one pass) and the learnt
signals (learning.fit's held-out machinery) are fused in numpy.

    .venv/bin/python bench/learning_designs.py [--data metatool] [--folds 5] [--only 0]

For each outer fold, every design chooses its weights (and neighbour count) by
coordinate ascent on the 3 inner folds of the training labels only, exactly as
learning.fit does, and is scored on the held-out fold. Designs:

* ``fuse``: learning.fit today, (base + sum w x signal) / (1 + sum w);
* ``z``: z(base) + sum w x z(signal), each row z-scored over the catalog's tools
  (the form of the fused peer, on Quiver's own engine score and signals);
* ``minmax``: the ``fuse`` form with each signal min-max scaled per row;
* ``z+prior``: ``z`` plus w x z(log share of the tool among the labels).

The engine's base matrix is cached in ``.quiver/bench-cache/designs-<set>.npz``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import CACHE_DIR, EmbeddingCache, get_embedder  # noqa: E402
from bench.learning import SEED, engine_matrix, label_free, labelled  # noqa: E402
from bench.learning_peers import (  # noqa: E402
    centroids,
    expanded_bm25,
    fused,
    metrics_of,
    nearest_cosine,
    tune_fused,
    zrows,
)
from bench.quality import Prepared, prepare  # noqa: E402
from learning.fit import (  # noqa: E402
    FOLDS,
    GRID,
    K_CHOICES,
    Labelled,
    build_signal,
    folds_of,
    held_out_by_k,
    relevance,
)
from learning.metrics import ndcg_at_10  # noqa: E402
from selection.engine.learnt import SIGNALS, fuse  # noqa: E402

PEER = ("p_expansion", "p_centroid", "p_nearest")
ALL_K = (*K_CHOICES, 160, 100_000)
Signals = Mapping[str, np.ndarray]
Combine = Callable[[np.ndarray, Signals, Mapping[str, float]], np.ndarray]


def minmax(matrix: np.ndarray) -> np.ndarray:
    low = matrix.min(axis=1, keepdims=True)
    spread = matrix.max(axis=1, keepdims=True) - low
    return np.divide(matrix - low, spread, out=np.zeros_like(matrix), where=spread > 0)


def fuse_z(
    base: np.ndarray, signals: Signals, weights: Mapping[str, float]
) -> np.ndarray:
    out = zrows(base)
    for name, w in weights.items():
        if w > 0:
            out = out + w * zrows(signals[name])
    return out - out.min(axis=1, keepdims=True) + 1.0


def fuse_any(
    base: np.ndarray, signals: Signals, weights: Mapping[str, float]
) -> np.ndarray:
    """learnt.fuse over any named signals (0..1 each)."""
    out = np.array(base, dtype=np.float64)
    total = 1.0
    for name, w in weights.items():
        if w > 0:
            out = out + w * signals[name]
            total += w
    return out / total


def fuse_minmax(
    base: np.ndarray, signals: Signals, weights: Mapping[str, float]
) -> np.ndarray:
    return fuse(
        base, {n: minmax(s) for n, s in signals.items() if n in SIGNALS}, weights
    )


def prior_of(labels: Sequence[Labelled], n: int) -> np.ndarray:
    """Log share of each tool among the labels (add-one)."""
    counts = np.ones(n)
    for lab in labels:
        for t in lab.tools:
            counts[t] += 1
    prior = np.log(counts / counts.sum())
    return (prior - prior.min()) / max(float(prior.max() - prior.min()), 1e-12)


def search(
    combine: Combine,
    base: np.ndarray,
    signals: Signals,
    rel: np.ndarray,
    names: Sequence[str],
) -> tuple[dict[str, float], float]:
    weights = dict.fromkeys(names, 0.0)
    best = float(ndcg_at_10(combine(base, signals, weights), rel).mean())
    for _ in range(2):
        moved = False
        for name in names:
            for value in GRID:
                trial = {**weights, name: value}
                score = float(ndcg_at_10(combine(base, signals, trial), rel).mean())
                if score > best + 1e-6:
                    best, weights, moved = score, trial, True
        if not moved:
            break
    return weights, best


RIDGE = (0.03, 0.1, 0.3, 1.0)


def ridge_matrix(labels: Sequence[Labelled], n: int, lam: float) -> np.ndarray:
    """One-vs-rest least squares of each tool's indicator on the label vectors
    (d x tools): (X'X + lam x tr(X'X)/d x I)^-1 X'Y, in closed form."""
    x = np.stack([lab.vector for lab in labels if lab.tools]).astype(np.float64)
    gram = x.T @ x
    d = gram.shape[0]
    sums = np.zeros((d, n))
    for lab, row in zip([lab for lab in labels if lab.tools], x, strict=True):
        for t in lab.tools:
            sums[:, t] += row
    gram[np.diag_indices(d)] += lam * np.trace(gram) / d
    return np.linalg.solve(gram, sums)


def ridge_scores(
    train: Sequence[Labelled], test: Sequence[Labelled], n: int
) -> dict[str, np.ndarray]:
    q = np.stack([lab.vector for lab in test]).astype(np.float64)
    out = {}
    for lam in RIDGE:
        raw = q @ ridge_matrix(train, n, lam)
        out[f"ridge{lam}"] = np.clip(
            raw / np.maximum(raw.max(axis=1, keepdims=True), 1e-9), 0, 1
        )
    if TEXT[0]:
        out["text"] = text_kernel_scores(train, test, n)
    return out


TEXT_LAMBDA = 1.0
TEXT = [False]  # --text: also the kernel ridge on words and vectors


def text_kernel_scores(
    train: Sequence[Labelled], test: Sequence[Labelled], n: int
) -> np.ndarray:
    """Kernel ridge (dual form) of each tool's label on the requests' words
    (TF-IDF over stemmed tokens, terms in >= 2 training requests) and vectors:
    K = words.words' + vector.vector', alpha = (K + lambda I)^-1 Y."""
    from selection.engine.text import tokenize

    named = [lab for lab in train if lab.tools]
    tokens = [tokenize(lab.text) for lab in named]
    df: dict[str, int] = {}
    for toks in tokens:
        for t in set(toks):
            df[t] = df.get(t, 0) + 1
    vocab = {t: i for i, t in enumerate(sorted(t for t, c in df.items() if c >= 2))}
    idf = np.array(
        [np.log(len(named) / df[t]) for t in sorted(vocab)], dtype=np.float32
    )

    def tfidf(labs: Sequence[Labelled]) -> np.ndarray:
        x = np.zeros((len(labs), len(vocab)), dtype=np.float32)
        for r, lab in enumerate(labs):
            for t in tokenize(lab.text):
                if t in vocab:
                    x[r, vocab[t]] += 1.0
        x *= idf
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return x / np.maximum(norms, 1e-9)

    xw = tfidf(named)
    xv = np.stack([lab.vector for lab in named]).astype(np.float32)
    kernel = (xw @ xw.T + xv @ xv.T).astype(np.float64)
    y = np.zeros((len(named), n))
    for r, lab in enumerate(named):
        y[r, list(lab.tools)] = 1.0
    kernel[np.diag_indices(len(named))] += TEXT_LAMBDA
    alpha = np.linalg.solve(kernel, y)
    tw = tfidf(test)
    tv = np.stack([lab.vector for lab in test]).astype(np.float32)
    raw = (tw @ xw.T + tv @ xv.T) @ alpha
    return np.clip(raw / np.maximum(raw.max(axis=1, keepdims=True), 1e-9), 0, 1)


def ridge_signals(
    labels: Sequence[Labelled], inner: np.ndarray, named: np.ndarray, n: int
) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for f in np.unique(inner):
        mine = np.flatnonzero(inner == f)
        train = [labels[i] for i in np.flatnonzero(inner != f)]
        for key, value in ridge_scores(train, [labels[i] for i in mine], n).items():
            out.setdefault(key, np.zeros((len(labels), n)))[mine] = value
    return {k: v[named] for k, v in out.items()}


def lams_of(design: str) -> tuple[float, ...]:
    return RIDGE if "ridge" in design else (0.0,)


def ks_of(design: str) -> tuple[int, ...]:
    if design.startswith("peer"):
        return (10,)
    return K_CHOICES if design.startswith("fuse") else ALL_K


def peer_signals(
    data: Prepared, train: np.ndarray, inner: np.ndarray, named: np.ndarray
) -> dict[str, np.ndarray]:
    """The fused peer's three history signals for the training labels, each
    inner fold's from the other inner folds (rows: the training labels that
    name a tool)."""
    n = len(data.specs)
    out = {k: np.zeros((len(train), n)) for k in PEER}
    for f in np.unique(inner):
        mine = np.flatnonzero(inner == f)
        found = peer_test(data, train[inner != f], train[mine])
        for k in PEER:
            out[k][mine] = found[k]
    return {k: v[named] for k, v in out.items()}


def peer_test(
    data: Prepared, train: np.ndarray, test: np.ndarray
) -> dict[str, np.ndarray]:
    named = np.array([i for i in train if data.queries[i].relevant])
    cents = centroids(data, named)
    return {
        "p_expansion": expanded_bm25(data, named, test),
        "p_centroid": data.query_vecs[test] @ cents.T,
        "p_nearest": nearest_cosine(data, named, test),
    }


def outer_fold(
    data: Prepared,
    names: Sequence[str],
    labels: list[Labelled],
    base: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    designs: Mapping[str, tuple[Combine, tuple[str, ...]]],
) -> dict[str, tuple[float, dict[str, float], int]]:
    train_labels = [labels[i] for i in train]
    inner = folds_of(len(train_labels), FOLDS)
    named = np.array([bool(lab.tools) for lab in train_labels])
    rows = np.arange(len(train_labels))
    by_k = held_out_by_k(names, train_labels, inner, rows, ALL_K)
    wanted = {p for _, parts in designs.values() for p in parts}
    peer = peer_signals(data, train, inner, named) if wanted & set(PEER) else {}
    peer.update(ridge_signals(train_labels, inner, named, len(names)))
    rel = relevance(train_labels, rows[named], len(names))
    prior = prior_of(train_labels, len(names))
    test_named = np.array([i for i in test if labels[i].tools])
    test_rel = relevance(labels, test_named, len(names))
    signal = build_signal("designs", "", names, train_labels)
    out = {}
    if "ltr" in designs:
        k = 100_000
        sigs = {n: s[named] for n, s in by_k[k].items()}
        sigs["prior"] = np.tile(prior, (int(named.sum()), 1))
        peer_all = peer_signals(data, train, inner, named)
        sigs.update(peer_all)
        sigs.update(ridge_signals(train_labels, inner, named, len(names)))
        sigs["ridge"] = sigs[f"ridge{RIDGE[0]}"]
        scored = signal.with_weights({}, k)
        found = [scored.scores(labels[i].vector, labels[i].terms) for i in test_named]
        tsigs = {n: np.array([f[n] for f in found]) for n in SIGNALS}
        tsigs["prior"] = np.tile(prior, (len(test_named), 1))
        tsigs.update(peer_test(data, train, test_named))
        tsigs.update(
            ridge_scores(train_labels, [labels[i] for i in test_named], len(names))
        )
        tsigs["ridge"] = tsigs[f"ridge{RIDGE[0]}"]
        scores = ltr(base[train][named], sigs, rel, base[test_named], tsigs)
        out["ltr"] = (float(ndcg_at_10(scores, test_rel).mean()), {}, k)
        print(f"    ltr      {out['ltr'][0]:.4f}", flush=True)
    for design, (combine, parts) in designs.items():
        if design == "ltr":
            continue
        best: tuple = (-1.0, {}, 0, 0)
        for k, lam in ((k, lam) for k in ks_of(design) for lam in lams_of(design)):
            sigs = {n: s[named] for n, s in by_k[k].items()}
            sigs["prior"] = np.tile(prior, (int(named.sum()), 1))
            sigs.update(peer)
            if lam:
                sigs["ridge"] = sigs[f"ridge{lam}"]
            weights, score = search(combine, base[train][named], sigs, rel, parts)
            if score > best[0]:
                best = (score, weights, k, lam)
        _, weights, k, lam = best
        scored = signal.with_weights({}, k)
        test_sigs: dict[str, np.ndarray] = {n: [] for n in SIGNALS}  # type: ignore[misc]
        for i in test_named:
            found = scored.scores(labels[i].vector, labels[i].terms)
            for n in SIGNALS:
                test_sigs[n].append(found[n])
        sigs = {n: np.array(v) for n, v in test_sigs.items()}
        sigs["prior"] = np.tile(prior, (len(test_named), 1))
        if wanted & set(PEER):
            sigs.update(peer_test(data, train, test_named))
        sigs.update(
            ridge_scores(train_labels, [labels[i] for i in test_named], len(names))
        )
        if lam:
            sigs["ridge"] = sigs[f"ridge{lam}"]
        result = ndcg_at_10(combine(base[test_named], sigs, weights), test_rel)
        out[design] = (float(result.mean()), weights, k)
        print(
            f"    {design:<8} {out[design][0]:.4f} k={k} lam={lam} {weights}",
            flush=True,
        )
    engine = float(ndcg_at_10(base[test_named], test_rel).mean())
    out["engine"] = (engine, {}, 0)
    return out


LTR_SIGNALS = (*SIGNALS, "prior", "ridge", *PEER)


def ltr_features(base: np.ndarray, sigs: Signals) -> np.ndarray:
    """(rows x tools x features): per signal its row z-score and 1/(1 + rank)."""
    parts = []
    for x in (base, *(sigs[n] for n in LTR_SIGNALS)):
        parts.append(zrows(x))
        ranks = np.argsort(np.argsort(-x, axis=1, kind="stable"), axis=1)
        parts.append(1.0 / (1.0 + ranks))
    return np.stack(parts, axis=2).astype(np.float32)


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    z = np.column_stack([x, np.ones(len(x))]).astype(np.float64)
    beta = np.zeros(z.shape[1])
    w = np.where(y, 0.5 / max(y.mean(), 1e-9), 0.5 / max(1 - y.mean(), 1e-9))
    for _ in range(25):
        p = 1 / (1 + np.exp(-np.clip(z @ beta, -50, 50)))
        grad = z.T @ (w * (p - y)) + l2 * beta
        hess = (z * (w * p * (1 - p))[:, None]).T @ z + l2 * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-6:
            break
    return beta


def ltr(
    train_base: np.ndarray,
    train_sigs: Signals,
    rel: np.ndarray,
    test_base: np.ndarray,
    test_sigs: Signals,
    depth: int = 20,
) -> np.ndarray:
    """A pointwise logistic ranker over the candidates: each training row's
    expected tools and its top ``depth`` tools by the plain z-sum of every signal."""
    feats = ltr_features(train_base, train_sigs)
    total = feats[:, :, 0::2].sum(axis=2)
    top = np.argpartition(-total, depth, axis=1)[:, :depth]
    pick = np.zeros_like(rel)
    np.put_along_axis(pick, top, True, axis=1)
    pick |= rel
    beta = logistic(feats[pick], rel[pick])
    tf = ltr_features(test_base, test_sigs)
    scores = tf @ beta[:-1] + beta[-1]
    return scores - scores.min(axis=1, keepdims=True) + 1.0


def oracle(
    data: Prepared,
    names: Sequence[str],
    labels: list[Labelled],
    base: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
) -> dict[str, float]:
    """The best NDCG@10 of a z-scored fusion on the outer fold with weights
    chosen ON that fold (an upper bound for any weighting of these signals,
    not a method): the fused peer's signals alone, and every signal here."""
    train_labels = [labels[i] for i in train]
    test_named = np.array([i for i in test if labels[i].tools])
    rel = relevance(labels, test_named, len(names))
    signal = build_signal("designs", "", names, train_labels)
    common = peer_test(data, train, test_named)
    common.update(
        ridge_scores(train_labels, [labels[i] for i in test_named], len(names))
    )
    common["ridge"] = common[f"ridge{RIDGE[0]}"]
    common["prior"] = np.tile(prior_of(train_labels, len(names)), (len(test_named), 1))
    out = {}
    for k in (40, 100_000):
        scored = signal.with_weights({}, k)
        found = [scored.scores(labels[i].vector, labels[i].terms) for i in test_named]
        sigs = {**common, **{n: np.array([f[n] for f in found]) for n in SIGNALS}}
        for label, parts in (
            ("oracle: peer signals", PEER),
            ("oracle: Quiver signals", (*SIGNALS, "prior", "ridge")),
            ("oracle: every signal", (*SIGNALS, "prior", "ridge", *PEER)),
            *(
                [
                    (
                        "oracle: every signal + text",
                        (*SIGNALS, "prior", "ridge", *PEER, "text"),
                    )
                ]
                if TEXT[0]
                else []
            ),
        ):
            _, score = search(fuse_z, base[test_named], sigs, rel, parts)
            out[label] = max(out.get(label, 0.0), score)
    for label, score in out.items():
        print(f"    {label:<24} {score:.4f}", flush=True)
    return out


DESIGNS: dict[str, tuple[Combine, tuple[str, ...]]] = {
    "fuse": (fuse, SIGNALS),
    "z": (fuse_z, SIGNALS),
    "minmax": (fuse_minmax, SIGNALS),
    "z+prior": (fuse_z, (*SIGNALS, "prior")),
    "fuse+prior": (fuse_any, (*SIGNALS, "prior")),
    "peer-z": (fuse_z, PEER),
    "z+peer": (fuse_z, (*SIGNALS, *PEER)),
    "fuse+ridge": (fuse_any, (*SIGNALS, "ridge")),
    "z+ridge": (fuse_z, (*SIGNALS, "ridge")),
    "ridge-only": (fuse_any, ("ridge",)),
    "ltr": (fuse_any, ()),
    "z+text": (fuse_z, (*SIGNALS, "text")),
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="metatool")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--only", type=int, default=None)
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--oracle", action="store_true")
    parser.add_argument("--text", action="store_true")
    parser.add_argument("--designs", default=",".join(DESIGNS))
    args = parser.parse_args(argv)
    TEXT[0] = args.text
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    data = prepare(args.data, None, EmbeddingCache(get_embedder()))
    cached = CACHE_DIR / f"designs-{args.data}.npz"
    if cached.exists():
        base = np.load(cached)["base"]
    else:
        started = time.perf_counter()
        base = engine_matrix(data)
        np.savez(cached, base=base)
        print(f"  engine pass {time.perf_counter() - started:.0f} s", flush=True)
    labels = labelled(data)
    hyb = label_free(data, base)["peer: plain hybrid"]
    names = [s.name for s in data.specs]
    fold_of = folds_of(len(data.queries), args.folds, SEED)
    chosen = {d: DESIGNS[d] for d in args.designs.split(",")}
    totals: dict[str, list[tuple[float, int]]] = {}
    for f in range(args.folds):
        if args.only is not None and f != args.only:
            continue
        started = time.perf_counter()
        train, test = np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f)
        print(f"  fold {f}", flush=True)
        if args.oracle:
            found = {
                k: (v, {}, 0)
                for k, v in oracle(data, names, labels, base, train, test).items()
            }
        else:
            found = outer_fold(data, names, labels, base, train, test, chosen)
        if not args.no_peer:
            named_train = np.array([i for i in train if data.queries[i].relevant])
            peer = fused(data, hyb)
            weights = tune_fused(named_train, data, peer)
            matrix = peer[1](peer[0](named_train, test), weights)
            score = float(
                np.mean([m["NDCG@10"] for m in metrics_of(matrix, test, data)])
            )
            found["fusedpeer"] = (score, {}, 0)
            print(f"    fused peer {score:.4f} {weights}", flush=True)
        count = sum(1 for i in test if labels[i].tools)
        for design, (score, _, _) in found.items():
            totals.setdefault(design, []).append((score, count))
        print(f"  fold {f}: {time.perf_counter() - started:.0f} s", flush=True)
    print(f"\n{args.data}: NDCG@10 on held-out outer folds (mean over requests)")
    for design, items in totals.items():
        mean = sum(s * c for s, c in items) / sum(c for _, c in items)
        print(
            f"  {design:<8} {mean:.4f}  per fold "
            + " ".join(f"{s:.4f}" for s, _ in items)
        )


if __name__ == "__main__":
    main()
