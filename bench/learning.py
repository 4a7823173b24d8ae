"""Learning from labelled history: Quiver's learnt ranking against label-free and
same-history peers, on folds of the dev sets (never scored on what was learnt).

    .venv/bin/python bench/learning.py [--data metatool|sealtools|stabletoolbench|all]
        [--folds 5] [--limit N] [--skip-speed] [--skip-by-kind] [--no-tool-random-folds]

For each data set the dev queries are cut into ``--folds`` folds (fixed seed).
For each fold the other folds' queries are the labels (history) and the fold is
scored. Rows of the table:

* label-free peers: BM25 and cosine over name + description, the plain hybrid
  0.7 x z(cosine) + 0.3 x z(BM25), and Quiver's engine at its defaults;
* same-history peers (bench/learning_peers.py), each tuned by 3-fold CV on the
  labels only: doc expansion, centroid, nearest labelled request, and the three
  fused with weights tuned on the labels (issue 33's four);
* Quiver with learning: learning.fit on the labels, the learnt signal applied
  through the real engine (selection.engine.select with the snapshot's learnt
  signal).

Then, on a set with no-tool requests (MetaTool), the no-tool false-positive rate
at the default request (3 candidates, min_score 0.05) and single-tool R@1,
without and with the calibrated decision, on fold-held-out requests and on
requests of a kind withheld from the labels (bench/learning_notool.py); and on
Seal-Tools' 4,076 tools with 10,000 labels, learn time and the in-process
selection latency with and without the learnt signal.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import DATASETS, EmbeddingCache, get_embedder  # noqa: E402
from bench.learning_peers import (  # noqa: E402
    ALPHAS,
    BETAS,
    GAMMAS,
    bm25_matrix,
    centroid,
    doc_expansion,
    fused,
    metrics_of,
    nearest_labelled,
    positive,
    ranked_names,
    tune,
    tune_fused,
    zrows,
)
from bench.quality import Prepared, hybrid_text, prepare, semantic_pool  # noqa: E402
from learning.fit import Labelled, build_signal, fit, folds_of  # noqa: E402
from learning.metrics import mean_metrics  # noqa: E402
from learning.tuning import LabelParts, Tuner, parts_of  # noqa: E402
from selection.engine import EngineSettings, SelectionRequest, select  # noqa: E402
from selection.engine.learnt import LearntSignal  # noqa: E402
from selection.engine.normalize import normalize  # noqa: E402
from selection.engine.snapshot import CatalogSnapshot  # noqa: E402

SEED = 20261126
FUSED = "same: all three fused"
COLUMNS = ("NDCG@10", "R@1", "MRR")
Matrix = np.ndarray


# --- shared pieces -------------------------------------------------------------------


def labelled(data: Prepared) -> list[Labelled]:
    """Every dev query as a label (vector, terms, text, tool rows)."""
    at = {s.name: i for i, s in enumerate(data.specs)}
    out = []
    for i, q in enumerate(data.queries):
        terms = normalize(SelectionRequest(query=q.text)).terms
        rows = tuple(at[t] for t in q.relevant if t in at)
        out.append(Labelled(data.query_vecs[i], terms, q.text, rows))
    return out


# --- label-free rankers -------------------------------------------------------


def engine_matrix(
    data: Prepared, snapshot=None, vectors: bool = False, request=None
) -> Matrix:
    """Engine scores (top 50, min_score 0) for every dev query, one row each."""
    snap = snapshot or data.snapshot
    at = {s.name: i for i, s in enumerate(data.specs)}
    out = np.zeros((len(data.queries), len(data.specs)))
    for i, q in enumerate(data.queries):
        req = request or SelectionRequest(query=q.text, max_candidates=50, min_score=0)
        req = replace(req, query=q.text)
        pool = semantic_pool(data, i, snap.settings.candidate_pool)
        vec = data.query_vecs[i] if vectors else None
        result = select(snap, req, semantic=pool, vector=vec)
        for pick in result.tools:
            out[i, at[pick.name]] = max(pick.score, 1e-9)
    return out


def label_free(data: Prepared, base: Matrix) -> dict[str, Matrix]:
    texts = [q.text for q in data.queries]
    bm25 = bm25_matrix([f"{s.name} {s.description}" for s in data.specs], texts)
    rich = bm25_matrix([hybrid_text(s) for s in data.specs], texts)
    cos = data.query_vecs @ data.peer_vecs.T
    hyb = 0.7 * zrows(data.query_vecs @ data.hybrid_vecs.T) + 0.3 * zrows(rich)
    return {
        "peer: BM25": bm25,
        "peer: cosine": cos + 2.0,
        "peer: plain hybrid": positive(hyb),
        "quiver: engine default": base,
    }


# --- Quiver with learning ----------------------------------------------------


def label_parts(data: Prepared) -> list[LabelParts]:
    """The hybrid scorer's settings-free inputs per dev query (learning.tuning),
    with the same semantic pool as the engine pass."""
    snap = data.snapshot
    return [
        parts_of(
            snap,
            SelectionRequest(query=q.text, max_candidates=50, min_score=0),
            semantic_pool(data, i, snap.settings.candidate_pool),
        )
        for i, q in enumerate(data.queries)
    ]


def fitted_snapshot(
    data: Prepared,
    labels: list[Labelled],
    base: Matrix,
    train: np.ndarray,
    parts: Sequence[LabelParts] | None = None,
) -> tuple[Any, CatalogSnapshot]:
    """Fit on ``train`` (engine settings and learnt signal, learning.fit) and
    the snapshot that applies both."""
    names = [s.name for s in data.specs]
    train_labels = [labels[i] for i in train]
    current = data.snapshot.settings
    tuner = Tuner(data.snapshot, [parts[i] for i in train]) if parts else None
    result = fit(names, train_labels, base[train], tuner=tuner, settings=current)
    signal = build_signal("bench", "", names, train_labels, result.weights, result.k)
    signal = replace(signal, no_tool_decision=result.no_tool)
    used = result.improves or result.no_tool is not None
    fitted = EngineSettings.from_dict({**current.to_dict(), **result.settings})
    snap = replace(
        data.snapshot.with_settings(fitted),
        learnt=signal if used else None,
    )
    return result, snap.warm()


def subset(data: Prepared, rows: np.ndarray) -> Prepared:
    """``data`` with only the queries ``rows``."""
    return replace(
        data,
        queries=[data.queries[i] for i in rows],
        query_vecs=data.query_vecs[rows],
        sentence_vecs=[data.sentence_vecs[i] for i in rows],
    )


def quiver_learnt(
    data: Prepared,
    labels: list[Labelled],
    base: Matrix,
    train: np.ndarray,
    test: np.ndarray,
    parts: Sequence[LabelParts] | None = None,
) -> tuple[Matrix, dict, object]:
    """Fit on ``train`` (engine settings and learnt signal), apply both through
    the real engine, score ``test``."""
    result, snap = fitted_snapshot(data, labels, base, train, parts)
    matrix = engine_matrix(subset(data, test), snap, vectors=True)
    return matrix, result.cv, (result, snap)


# --- report -----------------------------------------------------------------


def run_dataset(data: Prepared, folds: int) -> dict:
    labels = labelled(data)
    started = time.perf_counter()
    base = engine_matrix(data)
    print(f"  engine pass: {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    parts = label_parts(data)
    print(f"  tuning inputs: {time.perf_counter() - started:.1f} s", flush=True)
    fold_of = folds_of(len(data.queries), folds, SEED)
    everything = label_free(data, base)
    texts = [q.text for q in data.queries]
    rich = bm25_matrix([hybrid_text(s) for s in data.specs], texts)
    hyb = everything["peer: plain hybrid"]
    makers = {
        "same: doc expansion": (doc_expansion(data), ALPHAS),
        "same: centroid": (centroid(data, rich), BETAS),
        "same: nearest labelled": (nearest_labelled(data, hyb), GAMMAS),
    }
    fusion = fused(data, hyb)
    rows: dict[str, list[dict[str, float]]] = {k: [] for k in everything}
    rows.update({k: [] for k in makers})
    rows[FUSED] = []
    rows["quiver: with learning"] = []
    tuned: dict[str, list] = {k: [] for k in [*makers, FUSED]}
    fits, applied = [], []
    for f in range(folds):
        train = np.flatnonzero(fold_of != f)
        test = np.flatnonzero(fold_of == f)
        for label, matrix in everything.items():
            rows[label] += metrics_of(matrix[test], test, data)
        named_train = np.array([i for i in train if data.queries[i].relevant])
        for label, (peer, grid) in makers.items():
            value = tune(named_train, data, peer, grid)
            tuned[label].append(value)
            matrix = peer[1](peer[0](named_train, test), value)
            rows[label] += metrics_of(matrix, test, data)
        weights = tune_fused(named_train, data, fusion)
        tuned[FUSED].append(weights)
        matrix = fusion[1](fusion[0](named_train, test), weights)
        rows[FUSED] += metrics_of(matrix, test, data)
        t0 = time.perf_counter()
        matrix, cv, fitted = quiver_learnt(data, labels, base, train, test, parts)
        fits.append(time.perf_counter() - t0)
        applied.append(fitted)
        rows["quiver: with learning"] += metrics_of(matrix, test, data)
        print(f"  fold {f}: fit {cv} ({fits[-1]:.1f} s)", flush=True)
    print_table(data, rows, tuned, folds)
    return {
        "fold_of": fold_of,
        "applied": applied,
        "labels": labels,
        "base": base,
        "parts": parts,
    }


def print_table(data: Prepared, rows: dict, tuned: dict, folds: int) -> None:
    labelled_count = sum(1 for q in data.queries if q.relevant)
    print(
        f"\n{data.name}: {len(data.specs)} tools, {labelled_count} labelled queries, "
        f"{folds} folds (train on {folds - 1}, score the other)"
    )
    header = f"{'ranker':<28}" + "".join(f"{c:>9}" for c in COLUMNS) + "  notes"
    print(header)
    print("-" * len(header))
    means = {k: mean_metrics(v) for k, v in rows.items()}
    for label, m in means.items():
        note = ""
        if label in tuned:
            note = "tuned per fold: " + ", ".join(_value(v) for v in tuned[label])
        print(f"{label:<28}" + "".join(f"{m[c]:>9.3f}" for c in COLUMNS) + f"  {note}")
    mine = means["quiver: with learning"]["NDCG@10"]
    free = max(v["NDCG@10"] for k, v in means.items() if k.startswith("peer"))
    own = means["quiver: engine default"]["NDCG@10"]
    peers = {k: v["NDCG@10"] for k, v in means.items() if k.startswith("same")}
    best = max(peers, key=peers.__getitem__)
    same = peers[best]
    # Four decimals: a goal is met or missed on the unrounded difference.
    verdict = {True: "met", False: "MISSED"}
    print(
        f"NDCG@10 delta vs best label-free peer: {mine - free:+.4f} "
        f"(goal >= +0.050: {verdict[mine - free >= 0.05]})"
    )
    print(f"NDCG@10 delta vs Quiver without labels: {mine - own:+.4f}")
    print(
        f"NDCG@10 delta vs best same-history peer ({best[6:]}): {mine - same:+.4f} "
        f"(goal >= +0.020: {verdict[mine - same >= 0.02]})"
    )


def _value(value: float | tuple[float, ...]) -> str:
    if isinstance(value, tuple):
        return "/".join(f"{v:g}" for v in value)
    return f"{value:g}"


def no_tool_report(data: Prepared, state: dict) -> None:
    """FP rate and single-tool R@1 at the default request, per fold's fit."""
    fold_of = state["fold_of"]
    names = [s.name for s in data.specs]
    out: dict[str, list] = {
        "default": [],
        "learnt": [],
        "threshold": [],
        "calibrated": [],
    }
    for f, (result, snap) in enumerate(state["applied"]):
        test = np.flatnonzero(fold_of == f)
        sub = replace(
            data,
            queries=[data.queries[i] for i in test],
            query_vecs=data.query_vecs[test],
            sentence_vecs=[data.sentence_vecs[i] for i in test],
        )
        plain = engine_matrix(sub, data.snapshot, request=SelectionRequest(query=""))
        threshold = result.no_tool_threshold or 0.0
        learnt_snap = replace(
            snap, settings=replace(snap.settings, no_tool_threshold=threshold)
        ).warm()
        learnt = engine_matrix(
            sub, learnt_snap, vectors=True, request=SelectionRequest(query="")
        )
        # The learnt ranking without any no-tool gate, and with the top-score
        # threshold alone (learning.fit.calibrate_threshold), for comparison.
        ungated = snap.learnt and replace(snap.learnt, no_tool_decision=None)
        bare = replace(snap, learnt=ungated).warm()
        old = (result.cv.get("no_tool") or {}).get("threshold") or 0.0
        cut = replace(bare, settings=replace(bare.settings, no_tool_threshold=old))
        matrices = {"default": plain, "calibrated": learnt}
        for key, other in (("learnt", bare), ("threshold", cut.warm())):
            matrices[key] = engine_matrix(
                sub, other, vectors=True, request=SelectionRequest(query="")
            )
        for key, matrix in matrices.items():
            for j, q in enumerate(sub.queries):
                top = ranked_names(matrix[j], names, 3)
                if not q.relevant:
                    out[key].append(("fp", bool(top)))
                elif q.subset == "single_tool":
                    out[key].append(("r1", top[:1] == list(q.relevant)))
    print(
        f"\n{data.name}: no-tool at the default request (3 candidates, min_score 0.05)"
    )
    notes = {
        "default": "engine defaults, no labels",
        "learnt": "learnt ranking, no no-tool gate",
        "threshold": "learnt ranking + top-score threshold (calibrate_threshold)",
        "calibrated": "learnt ranking + the fitted no-tool decision (as applied)",
    }
    for key, items in out.items():
        fp = np.mean([v for k, v in items if k == "fp"])
        r1 = np.mean([v for k, v in items if k == "r1"])
        print(f"  {key:<11} FP rate {fp:.3f}  single-tool R@1 {r1:.3f}  {notes[key]}")
    decisions = [r.cv.get("no_tool", {}).get("learnt") for r, _ in state["applied"]]
    print(f"  fitted decisions (inner CV, per fold): {decisions}")


# --- speed: learn time and selection latency, 4,000 tools / 10,000 labels

SPEED_LABELS = 10_000
ENGINE_PROBE = 200


def perturbed_labels(labels: list[Labelled], count: int) -> list[Labelled]:
    """``count`` labels cycling through the dev queries: copy 0 is the query
    itself; copy c > 0 drops one random word from its text and adds Gaussian noise
    (sigma 0.05 per dimension) to its vector, renormalised."""
    rng = np.random.default_rng(SEED)
    out = []
    for n in range(count):
        lab = labels[n % len(labels)]
        if n < len(labels):
            out.append(lab)
            continue
        words = lab.text.split()
        if len(words) > 2:
            del words[int(rng.integers(len(words)))]
        text = " ".join(words)
        vec = lab.vector + rng.normal(0, 0.05, size=lab.vector.shape)
        vec = (vec / np.linalg.norm(vec)).astype(np.float32)
        terms = normalize(SelectionRequest(query=text)).terms
        out.append(Labelled(vec, terms, text, lab.tools))
    return out


def nearest_how(signal: LearntSignal) -> str:
    """How a request finds its nearest labelled requests, for the reports."""
    index = signal.nearest_index
    if index is None:
        return "every labelled request scanned"
    return (
        f"nearest labelled requests through {len(index.centres)} clusters, "
        f"{index.probes} probed"
    )


def speed_report(data: Prepared, state: dict) -> None:
    """Learn time and in-process selection latency with 10,000 labels."""
    # learning.services.learn.fit_sample (1,000 here; that module needs Django).
    fit_sample = 1000
    labels = [lab for lab in state["labels"] if lab.tools]
    many = perturbed_labels(labels, SPEED_LABELS)
    sample = np.sort(np.random.default_rng(11).permutation(len(many))[:fit_sample])
    probe = sample[:ENGINE_PROBE]
    started = time.perf_counter()
    probe_parts = label_engine_parts(data, many, probe)
    engine_s = (time.perf_counter() - started) * len(sample) / len(probe)
    parts = (probe_parts * (len(sample) // len(probe) + 1))[: len(sample)]
    names = [s.name for s in data.specs]
    started = time.perf_counter()
    # As the learn job: the engine's scores come from the tuning inputs.
    tuner = Tuner(data.snapshot, parts)
    base = tuner.matrix(data.snapshot.settings)
    result = fit(
        names, many, base, sample, tuner=tuner, settings=data.snapshot.settings
    )
    fit_s = time.perf_counter() - started
    started = time.perf_counter()
    signal = build_signal("speed", "", names, many, result.weights or {"knn": 1.0}, 10)
    build_s = time.perf_counter() - started
    print(
        f"\n{data.name}: learn time, {len(names)} tools, {len(many)} labels "
        "(dev queries repeated: each copy drops one word and adds N(0, 0.05) noise "
        "to the vector)"
    )
    print(
        f"  engine inputs for the {len(sample)}-label fit sample: {engine_s:.1f} s "
        f"(measured on {len(probe)}, scaled)"
    )
    print(
        f"  fit (engine settings, 3-fold CV weights, threshold): {fit_s:.1f} s "
        f"(settings: {result.cv.get('settings')}); "
        f"signal build at snapshot load: {build_s:.1f} s"
    )
    print(
        f"  total {engine_s + fit_s + build_s:.1f} s (goal < 60 s); label embedding "
        "not included (the query cache / stored vectors)"
    )
    latency(data, signal)


def label_engine_parts(
    data: Prepared, labels: list[Labelled], rows: np.ndarray
) -> list[LabelParts]:
    """Tuning inputs for labels (semantic pool by cosine over the tool vectors)."""
    out = []
    pool_size = data.snapshot.settings.candidate_pool
    for i in rows:
        lab = labels[int(i)]
        cos = data.tool_vecs @ lab.vector
        top = np.argpartition(-cos, pool_size)[:pool_size]
        pool = {data.specs[int(t)].name: float(cos[t]) for t in top}
        req = SelectionRequest(query=lab.text, max_candidates=50, min_score=0)
        out.append(parts_of(data.snapshot, req, pool))
    return out


def label_engine_scores(
    data: Prepared, labels: list[Labelled], rows: np.ndarray
) -> Matrix:
    """Engine scores for labels (semantic pool by cosine over the tool vectors)."""
    out = np.zeros((len(rows), len(data.specs)))
    at = {s.name: i for i, s in enumerate(data.specs)}
    pool_size = data.snapshot.settings.candidate_pool
    for j, i in enumerate(rows):
        lab = labels[int(i)]
        cos = data.tool_vecs @ lab.vector
        top = np.argpartition(-cos, pool_size)[:pool_size]
        pool = {data.specs[int(t)].name: float(cos[t]) for t in top}
        req = SelectionRequest(query=lab.text, max_candidates=50, min_score=0)
        for pick in select(data.snapshot, req, semantic=pool).tools:
            out[j, at[pick.name]] = max(pick.score, 1e-9)
    return out


LATENCY_QUERIES = 300
LATENCY_ROUNDS = 3
LATENCY_WARMUP = 50


def latency(data: Prepared, signal: LearntSignal) -> None:
    """In-process selection (vector search + engine) with and without the learnt
    signal: the default request, the same queries, interleaved (which goes first
    alternates), after a warm-up, on one BLAS thread as the app's processes run
    (config/threads.py sets it before numpy loads in gunicorn and Celery)."""
    from threadpoolctl import threadpool_limits

    from selection.engine.vectors import VectorTable

    table = VectorTable.build(
        "bench", data.tool_vecs.shape[1], len(data.specs),
        dict(enumerate(data.tool_vecs)),
    )  # fmt: skip
    started = time.perf_counter()
    signal.warm()  # the clusters of the labelled requests (snapshot.warm does it)
    warm_s = time.perf_counter() - started
    plain = replace(data.snapshot, vectors=table).warm()
    learnt = replace(plain, learnt=signal).warm()
    queries = data.queries[:LATENCY_QUERIES]
    arms = {"without": plain, "with": learnt}
    times: dict[str, list[float]] = {key: [] for key in arms}

    def one(snap: CatalogSnapshot, i: int) -> float:
        vec = data.query_vecs[i]
        t0 = time.perf_counter()
        rows = table.nearest(vec, snap.settings.candidate_pool)
        pool = {snap.tools[r].name: s for r, s in rows.items()}
        select(snap, SelectionRequest(query=queries[i].text), semantic=pool, vector=vec)
        return (time.perf_counter() - t0) * 1000

    with threadpool_limits(1):
        for i in range(min(LATENCY_WARMUP, len(queries))):
            for snap in arms.values():
                one(snap, i)
        for n in range(len(queries) * LATENCY_ROUNDS):
            i = n % len(queries)
            order = list(arms) if n % 2 == 0 else list(reversed(arms))
            for key in order:
                times[key].append(one(arms[key], i))
    p50 = {k: float(np.median(v)) for k, v in times.items()}
    p95 = {k: float(np.percentile(v, 95)) for k, v in times.items()}
    how = nearest_how(signal)
    print(
        f"  in-process select, {len(times['with'])} requests each (interleaved, "
        f"{LATENCY_WARMUP} warm-up, one BLAS thread); learnt signal: "
        f"{', '.join(signal.active)}, {how} (built in {warm_s:.1f} s)"
    )
    print(
        f"  p50: without {p50['without']:.2f} ms, with learnt model "
        f"{p50['with']:.2f} ms ({(p50['with'] / p50['without'] - 1) * 100:+.0f}%; "
        "goal within 10%)"
    )
    print(
        f"  p95: without {p95['without']:.2f} ms, with learnt model "
        f"{p95['with']:.2f} ms ({(p95['with'] / p95['without'] - 1) * 100:+.0f}%)"
    )
    paired = np.array(times["with"]) - np.array(times["without"])
    p10 = {k: float(np.percentile(v, 10)) for k, v in times.items()}
    print(
        f"  the same query back to back, with minus without: median "
        f"{np.median(paired):+.2f} ms; p10 (the least contended): without "
        f"{p10['without']:.2f} ms, with {p10['with']:.2f} ms"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=[*DATASETS, "all"], default="all")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument(
        "--skip-by-kind",
        action="store_true",
        help="skip the no-tool check held out by kind of request (5 more fits)",
    )
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument(
        "--no-tool-random-folds",
        action="store_true",
        help="calibrate 'no tool fits' on random folds (the old way), for comparison",
    )
    args = parser.parse_args(argv)
    if args.no_tool_random_folds:
        import learning.notool

        learning.notool.HOLD_OUT_BY_KIND = False
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = EmbeddingCache(get_embedder())
    if args.speed_only:
        data = prepare("sealtools", None, cache)
        speed_report(data, {"labels": labelled(data)})
        return
    names = DATASETS if args.data == "all" else (args.data,)
    for name in names:
        print(f"{name}: preparing", flush=True)
        data = prepare(name, args.limit, cache)
        state = run_dataset(data, args.folds)
        if any(not q.relevant for q in data.queries):
            no_tool_report(data, state)
            if not args.skip_by_kind:
                from bench.learning_notool import no_tool_by_kind

                no_tool_by_kind(data, state, args.folds)
        if name == "sealtools" and not args.skip_speed:
            speed_report(data, state)


if __name__ == "__main__":
    main()
