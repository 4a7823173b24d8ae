"""In-process latency of ``select`` at 4,076 tools (Seal-Tools) and 100,000 tools.

The 100,000-tool catalog repeats Seal-Tools' real descriptions under varied names
(``analyzeEvidence`` -> ``analyzeEvidenceV17``...). Semantic scores are computed
outside the timed call, as in the app (pgvector returns the pool); each
synthetic tool reuses the vector of the tool it copies. Run it through
``bench/quality.py --speed``.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from bench._data import EmbeddingCache, load_queries, load_specs, tool_embedding_text
from selection.engine import CatalogSnapshot, SelectionRequest, ToolRecord, select

SYNTHETIC_SIZE = 100_000
SPEED_SCORERS = ("keyword", "bm25f", "hybrid", "ensemble")


def synthetic_records(
    base: tuple[ToolRecord, ...], size: int
) -> tuple[ToolRecord, ...]:
    """``size`` records cycling through ``base`` with a version suffix on the name."""
    out = []
    for i in range(size):
        src = base[i % len(base)]
        name = src.name if i < len(base) else f"{src.name}V{i // len(base)}"
        out.append(replace(src, id=i, name=name, position=i))
    return tuple(out)


def _percentiles(samples: list[float]) -> str:
    """ "p50 x ms, p95 y ms" of millisecond samples."""
    p50, p95 = np.percentile(samples, [50, 95])
    return f"p50 {p50:6.2f} ms   p95 {p95:6.2f} ms"


def _time_scorers(
    snapshot: CatalogSnapshot,
    texts: list[str],
    pools: list[dict[str, float]],
) -> None:
    """Time ``select`` per scorer over the queries (semantic pool precomputed)."""
    for scorer in SPEED_SCORERS:
        samples = []
        for text, pool in zip(texts, pools, strict=True):
            request = SelectionRequest(query=text, scorer=scorer)
            start = time.perf_counter()
            select(snapshot, request, semantic=pool)
            samples.append((time.perf_counter() - start) * 1000)
        print(f"  {scorer:<10}{_percentiles(samples)}")


def _pools(
    names: list[str], vecs: np.ndarray, qvecs: np.ndarray, size: int
) -> list[dict[str, float]]:
    """Exact top-``size`` cosine pools per query (outside the timed section)."""
    pools = []
    for q in qvecs:
        cos = vecs @ q
        top = np.argpartition(-cos, size)[:size]
        pools.append({names[j]: float(cos[j]) for j in top})
    return pools


def run_speed(cache: EmbeddingCache, limit: int | None) -> None:
    """Print build time and per-query latency at 4,076 and 100,000 tools."""
    from bench.quality import records_from_specs

    specs = load_specs("sealtools")
    queries = load_queries("sealtools", limit or 200)
    texts = [q.text for q in queries]
    base_vecs = cache.get([tool_embedding_text(s) for s in specs])
    qvecs = cache.get(texts, kind="query")
    base = records_from_specs(specs)
    for size in (len(base), SYNTHETIC_SIZE):
        records = synthetic_records(base, size)
        start = time.perf_counter()
        snapshot = CatalogSnapshot("speed", str(size), records).warm()
        build = time.perf_counter() - start
        print(f"\n{size:,} tools: snapshot build {build:.1f} s, {len(texts)} queries")
        vecs = base_vecs[np.arange(size) % len(base)]
        names = [r.name for r in records]
        pool = snapshot.settings.candidate_pool
        _time_scorers(snapshot, texts, _pools(names, vecs, qvecs, pool))
