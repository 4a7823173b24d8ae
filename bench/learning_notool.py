""" "No tool fits" on requests of a kind the calibration never saw (issue 33).

MetaTool's no-tool requests carry no source field (they are the negatives of
its Task1: coding tasks, commonsense riddles, opinion and ethics questions,
writing tasks, from several instruction sets mixed). A random fold leaves
near-twins of most of them in the labels, so a fold-held-out false-positive
rate flatters the calibration. Here the dev set's no-tool requests are grouped
into one kind per outer fold (``learning.notool.kinds_of``: spherical k-means
of their vectors); for outer fold f, every no-tool request of kind f (in any
fold) is withheld from the labels, the fit runs on the rest of the other folds,
and the false-positive rate is measured on kind f's requests, at the default
request (3 candidates, ``min_score`` 0.05). Single-tool R@1 is measured on
fold f, with the fitted gate and without it.

The other sets' requests are not used as "no tool" requests for MetaTool's
catalog: StableToolBench's (weather, finance, sports, recipes ...) and
Seal-Tools' requests often do fit one of MetaTool's plugins, so they are not
guaranteed tool-free.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bench.learning import (
    engine_matrix,
    fitted_snapshot,
    ranked_names,
    subset,
)
from bench.quality import Prepared
from learning.notool import kinds_of
from selection.engine import SelectionRequest
from selection.engine.snapshot import CatalogSnapshot


def gates(result: object, snap: CatalogSnapshot) -> dict[str, CatalogSnapshot]:
    """The fitted snapshot as applied (decision or threshold) and without a gate."""
    threshold = getattr(result, "no_tool_threshold", None) or 0.0
    applied = replace(
        snap, settings=replace(snap.settings, no_tool_threshold=threshold)
    )
    ungated = snap.learnt and replace(snap.learnt, no_tool_decision=None)
    return {"gated": applied.warm(), "ungated": replace(snap, learnt=ungated).warm()}


def answered(
    data: Prepared, snap: CatalogSnapshot, rows: np.ndarray
) -> list[list[str]]:
    """The tools each request ``rows`` gets at the default request."""
    if not len(rows):
        return []
    names = [s.name for s in data.specs]
    request = SelectionRequest(query="")
    matrix = engine_matrix(subset(data, rows), snap, vectors=True, request=request)
    return [ranked_names(matrix[j], names, 3) for j in range(len(rows))]


def no_tool_by_kind(data: Prepared, state: dict, folds: int) -> None:
    """FP on no-tool requests of a kind withheld from the labels, per kind."""
    fold_of, labels = state["fold_of"], state["labels"]
    none = np.array([i for i, q in enumerate(data.queries) if not q.relevant])
    vecs = data.query_vecs[none].astype(np.float64)
    kind = kinds_of(vecs / np.linalg.norm(vecs, axis=1, keepdims=True), folds)
    print(f"\n{data.name}: no-tool held out by kind of request ({folds} kinds)")
    total = {"held": [], "fold": [], "gated": [], "ungated": []}
    for f in range(folds):
        held = none[kind == f]
        train = np.setdiff1d(np.flatnonzero(fold_of != f), held)
        test = np.flatnonzero(fold_of == f)
        seen = np.array([i for i in test if i in set(none) and i not in set(held)])
        single = np.array([i for i in test if data.queries[i].subset == "single_tool"])
        result, snap = fitted_snapshot(
            data, labels, state["base"], train, state["parts"]
        )
        arms = gates(result, snap)
        fp_held = [bool(t) for t in answered(data, arms["gated"], held)]
        fp_fold = [bool(t) for t in answered(data, arms["gated"], seen)]
        r1 = {}
        for key, arm in arms.items():
            tops = answered(data, arm, single)
            r1[key] = [
                t[:1] == list(data.queries[i].relevant)
                for t, i in zip(tops, single, strict=True)
            ]
        total["held"] += fp_held
        total["fold"] += fp_fold
        total["gated"] += r1["gated"]
        total["ungated"] += r1["ungated"]
        inner = (result.cv.get("no_tool") or {}).get("learnt") or {}
        print(
            f"  kind {f}: {len(held)} withheld requests, FP {np.mean(fp_held):.3f}; "
            f"fold {f}'s other no-tool {len(seen)}, FP {_mean(fp_fold)}; "
            f"R@1 {np.mean(r1['gated']):.3f} gated / {np.mean(r1['ungated']):.3f} "
            f"ungated; inner calibration FP {inner.get('fp')}"
        )
        print("    e.g. " + " | ".join(_short(data, i) for i in held[:3]))
    r1_gap = np.mean(total["ungated"]) - np.mean(total["gated"])
    print(
        f"  all kinds: FP {np.mean(total['held']):.3f} on {len(total['held'])} "
        f"withheld (goal <= 0.15); FP {_mean(total['fold'])} on "
        f"{len(total['fold'])} fold-held-out of seen kinds; single-tool R@1 "
        f"{np.mean(total['gated']):.3f} gated vs {np.mean(total['ungated']):.3f} "
        f"ungated ({r1_gap * 100:.1f} points; goal <= 2)"
    )


def _mean(values: list[bool]) -> str:
    return f"{np.mean(values):.3f}" if values else "-"


def _short(data: Prepared, row: int) -> str:
    text = " ".join(data.queries[int(row)].text.split())
    return text[:48]
