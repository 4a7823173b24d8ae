"""What each no-history idea buys, on dense (request x tool) matrices, with the
shipped constants chosen on folds and scored on the held-out fold.

    .venv/bin/python bench/nohistory_ideas.py [--data metatool|sealtools|...|all]

The hybrid's fusion is recomputed outside the engine (as bench/quality_fusion.py
does): the sentence-mixed cosine over every tool (the engine uses the pool, and
the pool's lowest cosine outside it), seed 002's keyword share, the name
coverage and BM25F relative to the best tool, so every idea is a line of numpy.
Every number is NDCG@10 minus the plain hybrid's on the same requests. The last
block picks the constants of the shipped fusion on 4 folds of every set at once
and scores the fifth (5 folds, seed 20261127). bench/nohistory.py measures the
shipped engine itself. See bench/README.md, "No history: a fusion chosen from
the catalog".
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import DATASETS, EmbeddingCache, get_embedder  # noqa: E402
from bench.learning import bm25_matrix, positive, zrows  # noqa: E402
from bench.nohistory import (  # noqa: E402
    BEFORE,
    first_sentences,
    labelled_only,
    relevance,
)
from bench.quality import Prepared, hybrid_text, prepare  # noqa: E402
from learning.fit import folds_of  # noqa: E402
from learning.metrics import ndcg_at_10  # noqa: E402
from selection.engine import SelectionRequest  # noqa: E402
from selection.engine.fusion import SHORT_REQUEST_TERMS, families  # noqa: E402
from selection.engine.index import LexicalIndex  # noqa: E402
from selection.engine.normalize import normalize  # noqa: E402
from selection.engine.scorers import lexical  # noqa: E402
from selection.engine.sentences import mix  # noqa: E402
from selection.engine.settings import DEFAULT_FIELD_WEIGHTS  # noqa: E402

Matrix = np.ndarray
FOLDS, SEED = 5, 20261127


class Signals:
    """The dense signals of one data set's labelled requests."""

    def __init__(self, data: Prepared) -> None:
        self.name = data.name
        self.rel = relevance(data)
        cos = data.query_vecs @ data.tool_vecs.T
        self.mix = np.stack(
            [
                mix(cos[i], s @ data.tool_vecs.T if len(s) else np.zeros((0, 1)))
                for i, s in enumerate(data.sentence_vecs)
            ]
        )
        self.multi = np.array([len(s) > 1 for s in data.sentence_vecs])
        texts = [q.text for q in data.queries]
        rich = bm25_matrix([hybrid_text(s) for s in data.specs], texts)
        hcos = data.query_vecs @ data.hybrid_vecs.T
        self.rich = rich
        self.plain = ndcg_at_10(
            positive(0.7 * zrows(hcos) + 0.3 * zrows(rich)), self.rel
        )
        terms = [normalize(SelectionRequest(query=t)) for t in texts]
        tools = data.snapshot.tools
        new = LexicalIndex(tools, DEFAULT_FIELD_WEIGHTS)
        old = LexicalIndex(tools, BEFORE["field_weights"])
        self.terms = np.array([len(t.terms) for t in terms])
        self.kw = np.stack([lexical.keyword(new, t) for t in terms])
        self.name_cov = np.stack(
            [lexical.field_coverage(new, t, "name") for t in terms]
        )
        self.bm_new = np.stack([lexical.bm25f(new, t) for t in terms])
        self.bm_old = np.stack([lexical.bm25f(old, t) for t in terms])
        self.params = np.stack([_param_coverage(new, t) for t in terms])
        self.family, self.scale = families(tools)
        self.vectors = data.tool_vecs
        self.agreement = data.snapshot.fusion.agreement

    def gain(self, scores: Matrix) -> np.ndarray:
        """Per-request NDCG@10 minus the plain hybrid's."""
        return ndcg_at_10(scores, self.rel) - self.plain


def _param_coverage(index: LexicalIndex, query: object) -> np.ndarray:
    """Share of a tool's parameter-text IDF mass the request mentions."""
    post = index.fields["params"]
    if "params" not in index.masses:  # once per index, as its own masses are
        counts = np.diff(post.offsets)
        terms = np.repeat(np.arange(len(counts)), counts)
        mass = np.zeros(index.n_docs)
        np.add.at(mass, post.docs, index.idf[terms])
        index.masses["params"] = mass
    acc = np.zeros(index.n_docs)
    for term, weight in index.term_ids(query.terms):  # type: ignore[attr-defined]
        if term is not None:
            docs, _ = post.rows(term)
            acc[docs] += weight * float(index.idf[term])
    mass = index.masses["params"]
    return np.divide(acc, mass, out=np.zeros_like(acc), where=mass > 0)


def relative(bm: Matrix, floor: float = 0.15) -> Matrix:
    """BM25F relative to the best tool's, as the hybrid's ``bm25f`` signal."""
    return np.minimum(bm / np.maximum(bm.max(axis=1, keepdims=True), floor), 1.0)


def fusion(
    s: Signals,
    wb: float,
    new: bool = True,
    wk: float = 0.3,
    wn: float = 0.1,
    short: bool = False,
) -> Matrix:
    """The hybrid's combined score (before the confidence factor); ``short``:
    the BM25F weight x min(1, content words / 15), as the engine does."""
    bm = s.bm_new if new else s.bm_old
    weight = np.full((len(s.terms), 1), wb)
    if short:
        weight = weight * np.minimum(1.0, s.terms / SHORT_REQUEST_TERMS)[:, None]
    lexical_part = wk * s.kw + weight * relative(bm) + wn * s.name_cov
    return 0.6 * np.clip(s.mix, 0, 1) + lexical_part


def without_diversity(s: Signals) -> Matrix:
    return pull(s, fusion(s, chosen_weight(s), short=True), 0.5)


def shipped(s: Signals, diversity: float = 0.2) -> Matrix:
    return mmr(s, positive(without_diversity(s)), diversity)


def chosen_weight(s: Signals) -> float:
    """The shipped rule's BM25F weight for this catalog."""
    from selection.engine.fusion import CatalogFusion

    empty = np.zeros(0)
    return CatalogFusion(s.agreement, 1, empty, empty).lexical_weight or 0.0


def pull(s: Signals, scores: Matrix, weight: float, damped: bool = True) -> Matrix:
    """The family pull (selection.engine.fusion.pulled) on dense scores."""
    if weight <= 0 or not len(s.scale):
        return scores
    out = scores.copy()
    rows = np.flatnonzero(s.family >= 0)
    ids = s.family[rows]
    scale = s.scale[ids] if damped else 1.0
    for i, row in enumerate(scores):
        best = np.full(len(s.scale), -np.inf)
        np.maximum.at(best, ids, row[rows])
        out[i, rows] += weight * scale * (best[ids] - row[rows])
    return out


def mmr(s: Signals, scores: Matrix, lam: float, depth: int = 30) -> Matrix:
    """Maximal marginal relevance over the top ``depth`` (tool vectors), for
    requests of several sentences only."""
    out = scores.copy()
    for i in np.flatnonzero(s.multi):
        top = np.argsort(-scores[i])[:depth]
        sim = s.vectors[top] @ s.vectors[top].T
        value = scores[i, top]
        value = (value - value.min()) / max(float(np.ptp(value)), 1e-9)
        chosen: list[int] = []
        rest = list(range(len(top)))
        while rest:
            penalty = sim[np.ix_(rest, chosen)].max(1) if chosen else 0.0
            best = rest[int(np.argmax((1 - lam) * value[rest] - lam * penalty))]
            chosen.append(best)
            rest.remove(best)
        out[i, top[chosen]] = scores[i].max() + np.linspace(2, 1, len(top))
    return out


Idea = Callable[[Signals], Matrix]
IDEAS: dict[str, Idea] = {
    "before: old field weights, bm25f 0.1": lambda s: fusion(s, 0.1, new=False),
    "equal field weights, bm25f 0.1": lambda s: fusion(s, 0.1),
    "  + bm25f weight from the agreement": lambda s: fusion(s, chosen_weight(s)),
    "  + x words/15 for short requests": lambda s: fusion(
        s, chosen_weight(s), short=True
    ),
    "  + family pull 0.5, damped": without_diversity,
    "  + diversity 0.2, several sentences (shipped)": shipped,
    "tried: bm25f 0.4 everywhere": lambda s: fusion(s, 0.4),
    "tried: bm25f 0 everywhere": lambda s: fusion(s, 0.0),
    "tried: family pull 0.5, not damped": lambda s: pull(
        s, fusion(s, chosen_weight(s), short=True), 0.5, damped=False
    ),
    "tried: z(mix) + 0.4 z(BM25F)": lambda s: positive(
        0.6 * zrows(s.mix) + 0.4 * zrows(s.bm_new)
    ),
    "tried: shipped + 0.3 z(plain BM25)": lambda s: positive(
        zrows(shipped(s)) + 0.3 * zrows(s.rich)
    ),
    "tried: shipped + 0.05 parameter coverage": lambda s: shipped(s) + 0.05 * s.params,
}


def table(sets: Sequence[Signals], proxies: Sequence[Signals]) -> None:
    heads = [s.name for s in sets] + [f"{s.name[:9]}, 1st" for s in proxies]
    print(f"\n{'NDCG@10 - plain hybrid':<46}" + "".join(f"{h:>16}" for h in heads))
    for label, idea in IDEAS.items():
        gains = [float(s.gain(positive(idea(s))).mean()) for s in sets]
        vague = [float(s.gain(positive(idea(s))).mean()) for s in proxies]
        cells = "".join(f"{g:>+16.4f}" for g in gains + vague)
        print(f"{label:<46}{cells}   mean of the dev sets {np.mean(gains):+.4f}")


GRID = {
    "keyword weight": (0.2, 0.3, 0.4),
    "name weight": (0.05, 0.1, 0.15),
    "bm25f weight, low agreement": (0.0, 0.05, 0.1),
    "bm25f weight, high agreement": (0.3, 0.4, 0.5),
    "family pull": (0.0, 0.25, 0.5, 0.75),
}


def held_out(sets: Sequence[Signals]) -> None:
    """Constants picked on 4 folds of every set at once, scored on the fifth."""
    grid = list(itertools.product(*GRID.values()))
    per: dict[tuple[str, tuple[float, ...]], np.ndarray] = {}
    for s in sets:
        low = (s.agreement or 0.0) < 0.44
        for p in grid:
            wk, wn, lo, hi, lam = p
            weight = lo if low else hi
            scores = pull(s, fusion(s, weight, wk=wk, wn=wn, short=True), lam)
            per[s.name, p] = s.gain(positive(scores))
    folds = {s.name: folds_of(len(s.rel), FOLDS, SEED) for s in sets}
    held: dict[str, list[np.ndarray]] = {s.name: [] for s in sets}
    for f in range(FOLDS):

        def train(p: tuple[float, ...], f: int = f) -> float:
            return float(
                np.mean([per[s.name, p][folds[s.name] != f].mean() for s in sets])
            )

        best = max(grid, key=train)
        chosen = zip(GRID, best, strict=True)
        print(f"  fold {f}: " + ", ".join(f"{k} {v:g}" for k, v in chosen))
        for s in sets:
            held[s.name].append(per[s.name, best][folds[s.name] == f])
    gains = {k: float(np.concatenate(v).mean()) for k, v in held.items()}
    cells = ", ".join(f"{k} {v:+.4f}" for k, v in gains.items())
    print(f"held out: {cells}; mean {np.mean(list(gains.values())):+.4f}")


def held_out_diversity(sets: Sequence[Signals]) -> None:
    """The diversity weight picked on 4 folds of every set, scored on the fifth."""
    grid = (0.0, 0.1, 0.2, 0.3)
    per = {(s.name, d): s.gain(positive(shipped(s, d))) for s in sets for d in grid}
    folds = {s.name: folds_of(len(s.rel), FOLDS, SEED) for s in sets}
    held: dict[str, list[np.ndarray]] = {s.name: [] for s in sets}
    picked = []
    for f in range(FOLDS):

        def train(d: float, f: int = f) -> float:
            return float(
                np.mean([per[s.name, d][folds[s.name] != f].mean() for s in sets])
            )

        picked.append(max(grid, key=train))
        for s in sets:
            held[s.name].append(per[s.name, picked[-1]][folds[s.name] == f])
    gains = {k: float(np.concatenate(v).mean()) for k, v in held.items()}
    cells = ", ".join(f"{k} {v:+.4f}" for k, v in gains.items())
    print(f"diversity picked per fold: {picked}")
    print(
        f"held out (shipped form): {cells}; mean {np.mean(list(gains.values())):+.4f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=[*DATASETS, "all"], default="all")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = EmbeddingCache(get_embedder())
    names = DATASETS if args.data == "all" else (args.data,)
    sets, proxies = [], []
    for name in names:
        data = labelled_only(prepare(name, None, cache))
        sets.append(Signals(data))
        proxies.append(Signals(first_sentences(data, cache)))
        print(f"{name}: agreement {sets[-1].agreement:.3f}", flush=True)
    print("columns ', 1st': each request of several sentences cut to its first")
    table(sets, proxies)
    print("\nconstants chosen on 4 folds, scored on the fifth (diversity off):")
    held_out(sets)
    held_out_diversity(sets)


if __name__ == "__main__":
    main()
