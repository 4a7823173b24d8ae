"""No history: Quiver's default ranking against the plain hybrid, on every dev set.

    .venv/bin/python bench/nohistory.py [--data metatool|sealtools|stabletoolbench|all]
        [--limit N] [--speed N]

For each data set (shared/bench/data) it ranks every labelled dev request three
ways and prints NDCG@10:

* **plain hybrid**: 0.7 x z(MiniLM cosine) + 0.3 x z(BM25) over the split name,
  description and parameters (bench/quality.py's peer, issue 33's yardstick);
* **before**: the engine under the defaults before issue 33 (field weights name 3,
  title 2.5, keywords 3, examples 2, parameters 0.5, tags 1; the hybrid's BM25F
  weight fixed at 0.1; no family pull, no diversity), which reproduces main at
  db03463;
* **after**: the engine at today's defaults: the fusion it chooses from the
  catalog itself (selection.engine.fusion), shown under the table.

Then the same for the "first sentence" proxies of short, vague requests (each
request of several sentences cut to its first sentence, e.g. "I want to plan a
surprise birthday party for my friend."; its labels kept), the per-fold spread
of after - plain (5 folds), on MetaTool the no-tool false-positive rate and
single-tool R@1 at the default request (3 candidates, min_score 0.05), and with
``--speed N`` the engine's own time per request, before and after, interleaved
on one BLAS thread (N requests per set, the default request). See
bench/README.md, "No history: a fusion chosen from the catalog".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import DATASETS, EmbeddingCache, Query, get_embedder  # noqa: E402
from bench.learning import bm25_matrix, engine_matrix, positive, zrows  # noqa: E402
from bench.quality import (  # noqa: E402
    Prepared,
    embed_text,
    hybrid_text,
    prepare,
    semantic_pool,
)
from learning.fit import folds_of  # noqa: E402
from learning.metrics import ndcg_at_10  # noqa: E402
from selection.engine import EngineSettings, SelectionRequest, select  # noqa: E402
from selection.engine.sentences import split_sentences  # noqa: E402
from selection.engine.snapshot import CatalogSnapshot  # noqa: E402

FOLDS, SEED = 5, 20261127
BEFORE = {
    "auto_fusion": False,
    "family_pull": 0.0,
    "diversity": 0.0,
    "field_weights": {
        "name": 3.0,
        "title": 2.5,
        "keywords": 3.0,
        "examples": 2.0,
        "description": 1.0,
        "category": 0.5,
        "tags": 1.0,
        "params": 0.5,
        "avoid_when": 0.3,
    },
}


def relevance(data: Prepared) -> np.ndarray:
    """(requests x tools) True where a tool is labelled for the request."""
    at = {s.name: i for i, s in enumerate(data.specs)}
    rel = np.zeros((len(data.queries), len(data.specs)), dtype=bool)
    for i, q in enumerate(data.queries):
        rel[i, [at[t] for t in q.relevant if t in at]] = True
    return rel


def plain_hybrid(data: Prepared) -> np.ndarray:
    """The peer's scores, one row per request."""
    texts = [q.text for q in data.queries]
    rich = bm25_matrix([hybrid_text(s) for s in data.specs], texts)
    cosine = data.query_vecs @ data.hybrid_vecs.T
    return positive(0.7 * zrows(cosine) + 0.3 * zrows(rich))


def before_snapshot(data: Prepared) -> CatalogSnapshot:
    """The same catalog under the defaults before issue 33."""
    merged = {**data.snapshot.settings.to_dict(), **BEFORE}
    return data.snapshot.with_settings(EngineSettings.from_dict(merged)).warm()


def labelled_only(data: Prepared) -> Prepared:
    keep = [i for i, q in enumerate(data.queries) if q.relevant]
    return subset(data, keep)


def subset(data: Prepared, rows: Sequence[int]) -> Prepared:
    return replace(
        data,
        queries=[data.queries[i] for i in rows],
        query_vecs=data.query_vecs[list(rows)],
        sentence_vecs=[data.sentence_vecs[i] for i in rows],
    )


def first_sentences(data: Prepared, cache: EmbeddingCache) -> Prepared:
    """Each request of several sentences cut to its first (labels kept)."""
    rows, texts = [], []
    for i, q in enumerate(data.queries):
        found = split_sentences(embed_text(q.text))
        if found:
            rows.append(i)
            texts.append(found[0])
    cut = subset(data, rows)
    queries = [
        Query(q.id, text, q.relevant, q.subset)
        for q, text in zip(cut.queries, texts, strict=True)
    ]
    vecs = cache.get(texts, kind="query")
    empty = [np.zeros((0, vecs.shape[1]), np.float32) for _ in texts]
    return replace(cut, queries=queries, query_vecs=vecs, sentence_vecs=empty)


def scores(data: Prepared) -> dict[str, np.ndarray]:
    """Per-request NDCG@10 of the three rankers."""
    rel = relevance(data)
    return {
        "plain": ndcg_at_10(plain_hybrid(data), rel),
        "before": ndcg_at_10(engine_matrix(data, before_snapshot(data)), rel),
        "after": ndcg_at_10(engine_matrix(data), rel),
    }


HEADER = (
    f"{'set':<34}{'requests':>9}{'plain':>8}{'before':>8}{'after':>8}"
    f"{'before-plain':>14}{'after-plain':>13}{'after-before':>14}  "
    "after-plain per fold"
)


def row(label: str, per: dict[str, np.ndarray]) -> str:
    m = {k: float(v.mean()) for k, v in per.items()}
    fold = folds_of(len(per["plain"]), FOLDS, SEED)
    gains = per["after"] - per["plain"]
    spread = " ".join(f"{gains[fold == f].mean():+.3f}" for f in range(FOLDS))
    return (
        f"{label:<34}{len(per['plain']):>9}{m['plain']:>8.4f}{m['before']:>8.4f}"
        f"{m['after']:>8.4f}{m['before'] - m['plain']:>+14.4f}"
        f"{m['after'] - m['plain']:>+13.4f}{m['after'] - m['before']:>+14.4f}  "
        f"{spread}"
    )


def fusion_line(data: Prepared) -> str:
    """What the engine chose for this catalog, as its answers' stats say."""
    request = SelectionRequest(query=data.queries[0].text, min_score=0)
    pool = semantic_pool(data, 0, data.snapshot.settings.candidate_pool)
    fusion = select(data.snapshot, request, semantic=pool).stats.fusion
    return f"  {data.name}: {fusion}"


def no_tool_line(data: Prepared) -> str | None:
    """Before / after at the default request (3 candidates, min_score 0.05): the
    share of no-tool requests offered a tool, and single-tool R@1."""
    if all(q.relevant for q in data.queries):
        return None
    ask = SelectionRequest(query="")
    cells = []
    for label, snap in (("before", before_snapshot(data)), ("after", data.snapshot)):
        matrix = engine_matrix(data, snap, request=ask)
        top = matrix > 0
        none = [i for i, q in enumerate(data.queries) if not q.relevant]
        single = [i for i, q in enumerate(data.queries) if len(q.relevant) == 1]
        fp = float(np.mean([top[i].any() for i in none]))
        hits = [_first(matrix[i]) in _rows(data, i) for i in single]
        cells.append(f"{label} FP {fp:.3f} single-tool R@1 {np.mean(hits):.3f}")
    return f"  {data.name}: " + "; ".join(cells)


def _first(row: np.ndarray) -> int:
    return int(np.argmax(row)) if row.max() > 0 else -1


def _rows(data: Prepared, i: int) -> set[int]:
    at = {s.name: r for r, s in enumerate(data.specs)}
    return {at[t] for t in data.queries[i].relevant}


def engine_time(data: Prepared, count: int) -> str:
    """p50 / p95 ms of ``select`` alone, before vs after, interleaved."""
    from threadpoolctl import threadpool_limits

    arms = {"before": before_snapshot(data), "after": data.snapshot}
    times: dict[str, list[float]] = {k: [] for k in arms}
    rows = list(range(min(count, len(data.queries))))
    pools = [semantic_pool(data, i, 50) for i in rows]
    with threadpool_limits(1):
        for n, i in enumerate(rows * 2):
            order = list(arms) if n % 2 == 0 else list(reversed(arms))
            for key in order:
                request = SelectionRequest(query=data.queries[i].text)
                start = time.perf_counter()
                select(arms[key], request, semantic=pools[i])
                if n >= len(rows):  # the first pass warms caches
                    times[key].append((time.perf_counter() - start) * 1000)
    parts = [
        f"{k} p50 {np.median(v):.2f} p95 {np.percentile(v, 95):.2f}"
        for k, v in times.items()
    ]
    paired = np.array(times["after"]) - np.array(times["before"])
    parts.append(
        f"after - before, same request back to back: median {np.median(paired):+.3f}"
    )
    return f"  {data.name}: {len(times['after'])} requests: " + "; ".join(parts)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=[*DATASETS, "all"], default="all")
    parser.add_argument("--limit", type=int, default=None, help="first N requests")
    parser.add_argument("--speed", type=int, default=0, help="time N requests/set")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = EmbeddingCache(get_embedder())
    names = DATASETS if args.data == "all" else (args.data,)
    lines, proxies, fusions, speeds, gains = [], [], [], [], []
    no_tool = []
    for name in names:
        everything = prepare(name, args.limit, cache)
        no_tool.append(no_tool_line(everything))
        data = labelled_only(everything)
        per = scores(data)
        gains.append(float((per["after"] - per["plain"]).mean()))
        lines.append(row(name, per))
        fusions.append(fusion_line(data))
        vague = first_sentences(data, cache)
        if len(vague.queries):
            proxies.append(row(f"{name}, first sentence only", scores(vague)))
        if args.speed:
            speeds.append(engine_time(data, args.speed))
        print(f"{name}: done", flush=True)
    print("\nNDCG@10 over every labelled dev request (plain = the plain hybrid)")
    print(HEADER)
    print("\n".join(lines))
    print(f"{'average after-plain':<34}{np.mean(gains):>+68.4f}")
    print("proxies of short, vague requests (not a goal; a check)")
    print("\n".join(proxies))
    print("\nfusion chosen per catalog (stats.fusion of an answer):")
    print("\n".join(fusions))
    found = [line for line in no_tool if line]
    if found:
        print("\nno-tool requests at the default request (3 candidates, 0.05):")
        print("\n".join(found))
    if speeds:
        print("\nengine time per request, in process (ms):")
        print("\n".join(speeds))


if __name__ == "__main__":
    main()
