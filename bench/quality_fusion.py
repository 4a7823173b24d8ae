"""What each fusion idea buys, on two fixed random halves of the dev queries.

    .venv/bin/python bench/quality_fusion.py [--data metatool|sealtools|all]

Dense per-query matrices (query x tool) of cosine and of the engine's BM25F are
fused outside the engine, so each idea is a line of numpy. Half A (seed
20261123) is where a weight would be picked, half B checks it. See
bench/README.md, "Quality: what each idea buys".
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import (  # noqa: E402
    DATASETS,
    EmbeddingCache,
    get_embedder,
    load_queries,
    load_specs,
    tool_embedding_text,
)
from bench.quality import PlainBM25, hybrid_text, records_from_specs  # noqa: E402
from selection.engine import CatalogSnapshot, SelectionRequest  # noqa: E402
from selection.engine.normalize import normalize  # noqa: E402
from selection.engine.scorers import lexical  # noqa: E402

SEED = 20261123
SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+")
Matrix = np.ndarray


def ndcg(scores: Matrix, relevant: Sequence[np.ndarray]) -> np.ndarray:
    """Per-query NDCG@10 of a dense score matrix (ties by catalog order)."""
    top = np.argsort(-scores, axis=1, kind="stable")[:, :10]
    disc = 1 / np.log2(np.arange(2, 12))
    out = np.zeros(len(scores))
    for i, rel in enumerate(relevant):
        out[i] = (np.isin(top[i], rel) * disc).sum() / disc[: min(len(rel), 10)].sum()
    return out


def z(m: Matrix) -> Matrix:
    """Standardised per row (query) over the catalog."""
    sd = m.std(axis=1, keepdims=True)
    return np.where(
        sd > 0, (m - m.mean(axis=1, keepdims=True)) / np.maximum(sd, 1e-12), 0.0
    )


def rrf(*ms: Matrix, k: int = 60) -> Matrix:
    """Reciprocal rank fusion."""
    out = np.zeros_like(ms[0])
    for m in ms:
        out += 1.0 / (k + 1 + np.argsort(np.argsort(-m, axis=1, kind="stable"), axis=1))
    return out


def segments(text: str) -> list[str]:
    """The sentences of a request with at least three words (else the request)."""
    parts = [p.strip() for p in SENTENCE_RE.split(text) if len(p.split()) >= 3]
    return parts or [text]


def signals(name: str, cache: EmbeddingCache) -> dict[str, object]:
    """Every matrix the ideas below need, for the labelled queries."""
    specs = load_specs(name)
    queries = [q for q in load_queries(name) if q.relevant]
    pos = {s.name: i for i, s in enumerate(specs)}
    texts = [q.text for q in queries]
    snap = CatalogSnapshot(name, "bench", records_from_specs(specs)).warm()
    norm = [normalize(SelectionRequest(query=t)) for t in texts]
    qv = cache.get(texts, kind="query")
    segs = [segments(t) for t in texts]
    flat = sorted({s for ss in segs for s in ss})
    sv = cache.get(flat, kind="query")
    at = {s: i for i, s in enumerate(flat)}
    docs = cache.get([hybrid_text(s) for s in specs])
    rich = PlainBM25(specs, texts=[hybrid_text(s) for s in specs])
    return {
        "rel": [np.array([pos[r] for r in q.relevant if r in pos]) for q in queries],
        "half": np.random.default_rng(SEED).permutation(len(queries)) % 2,
        "cos_cur": qv @ cache.get([tool_embedding_text(s) for s in specs]).T,
        "cos_peer": qv @ cache.get([f"{s.name}: {s.description}" for s in specs]).T,
        "cos": qv @ docs.T,
        "seg": np.array([(sv[[at[s] for s in ss]] @ docs.T).max(0) for ss in segs]),
        "bm25f": np.array([lexical.bm25f(snap.index, q) for q in norm]),
        "bm25_rich": np.array([rich.scores(t) for t in texts]),
        "docs": docs,
        "qv": qv,
    }


def rocchio(s: dict[str, object], k: int = 3, beta: float = 0.3) -> Matrix:
    """Cosine after moving the query towards its top ``k`` tools' vectors."""
    qv, docs = np.asarray(s["qv"]), np.asarray(s["docs"])
    top = np.argsort(-(qv @ docs.T), axis=1)[:, :k]
    moved = qv + beta * docs[top].mean(1)
    moved /= np.linalg.norm(moved, axis=1, keepdims=True)
    return moved @ docs.T


def ideas(s: dict[str, object]) -> list[tuple[str, Callable[[], Matrix]]]:
    """Label and score matrix of every idea measured."""
    m: dict[str, Matrix] = {k: np.asarray(v) for k, v in s.items() if k not in ("rel",)}
    cos, bm = m["cos"], m["bm25f"]
    mix = 0.7 * m["seg"] + 0.3 * cos
    out: list[tuple[str, Callable[[], Matrix]]] = [
        ("peer: plain hybrid", lambda: 0.7 * z(cos) + 0.3 * z(m["bm25_rich"])),
        ("peer: cosine name: desc", lambda: m["cos_peer"]),
        ("cosine, engine text", lambda: m["cos_cur"]),
        ("cosine, split+params text", lambda: cos),
        ("engine BM25F alone", lambda: bm),
    ]
    for w in (0.2, 0.3, 0.5):
        out.append(
            (f"z(cos) + z(BM25F), w={w}", lambda w=w: (1 - w) * z(cos) + w * z(bm))
        )
    out += [
        ("RRF(cos, BM25F), k=60", lambda: rrf(cos, bm)),
        ("Rocchio k3 b.3, z w=.3", lambda: 0.7 * z(rocchio(s)) + 0.3 * z(bm)),
        ("segments: max-sim cos", lambda: m["seg"]),
        ("seg .7+cos .3, z w=.3", lambda: 0.7 * z(mix) + 0.3 * z(bm)),
    ]
    return out


def report(name: str, cache: EmbeddingCache) -> None:
    """Print NDCG@10 on half A, half B and all labelled queries."""
    s = signals(name, cache)
    rel, half = s["rel"], np.asarray(s["half"])
    print(f"\n{name}: NDCG@10 (half A = tune, half B = check)")
    print(f"{'idea':<30}{'A':>8}{'B':>8}{'all':>8}")
    best = np.zeros(len(half))
    cos, bm = np.asarray(s["cos"]), np.asarray(s["bm25f"])
    for label, scores in ideas(s):
        v = ndcg(scores(), rel)  # type: ignore[arg-type]
        a, b = v[half == 0].mean(), v[half == 1].mean()
        print(f"{label:<30}{a:>8.3f}{b:>8.3f}{v.mean():>8.3f}")
    for w in np.linspace(0, 1, 11):
        best = np.maximum(best, ndcg((1 - w) * z(cos) + w * z(bm), rel))  # type: ignore[arg-type]
    print(
        f"{'oracle: best w per query':<30}{best[half == 0].mean():>8.3f}"
        f"{best[half == 1].mean():>8.3f}{best.mean():>8.3f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Parse arguments and print one table per data set."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=[*DATASETS, "all"], default="all")
    args = parser.parse_args(argv)
    cache = EmbeddingCache(get_embedder())
    for name in DATASETS if args.data == "all" else (args.data,):
        report(name, cache)


if __name__ == "__main__":
    main()
