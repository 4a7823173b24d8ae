"""The engine's own CPU per request, where it goes, and proof that a cheaper
engine gives the same answers (issue 32).

    .venv/bin/python bench/engine_cost.py record FILE [--data ...] [--limit N]
    .venv/bin/python bench/engine_cost.py check FILE [--data ...] [--limit N]
    .venv/bin/python bench/engine_cost.py time [--data ...] [--requests N] [--profile N]

Each data set's tools (shared/bench/data) make a snapshot as the app holds one
(the tool vectors in process, the defaults' settings); every dev request gets
its semantic pool exactly as /select computes it in process
(``VectorTable.nearest_mixed`` over the request's and its sentences' cached
vectors) and is ranked three ways: the default request, ``explain`` with ten
candidates at ``min_score`` 0, and an agent's request with ``visible_unsafe``
off (what bench/load.py times).

* ``record``: writes every answer (picks with their scores, signals and
  reasons, the exclusions, the stats but their elapsed time, the debug block)
  and every semantic pool to FILE; ``check``: ranks again and compares with
  FILE, every float to 1e-9 (``--exact``: bit for bit) and everything else
  exactly; it prints the first differences and exits 1 if there are any.
  Record on the code before a change, check after it.
* ``time``: CPU ms per request on one BLAS thread (``time.thread_time``), by
  stage: the query's encoding by the full model (its cache emptied), the
  sentences' by the static encoder, the in-process vector search, ``select``;
  ``--profile N``: cProfile's top N functions of ``select`` alone.

See bench/README.md, "Selections and calls with no framework tax (issue 32)".
"""

from __future__ import annotations

import argparse
import cProfile
import math
import os
import pickle
import pstats
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench._data import DATASETS, EmbeddingCache, get_embedder  # noqa: E402
from bench.quality import Prepared, embed_text, prepare  # noqa: E402
from selection.engine import SelectionRequest, select  # noqa: E402
from selection.engine.sentences import split_sentences  # noqa: E402
from selection.engine.types import SelectionResult  # noqa: E402

TOLERANCE = [1e-9]  # --exact: 0, every float bit for bit
WAYS: dict[str, Callable[[str], SelectionRequest]] = {
    "default": lambda text: SelectionRequest(query=text),
    "explain": lambda text: SelectionRequest(
        query=text, max_candidates=10, min_score=0.0, explain=True
    ),
    "agent": lambda text: replace(
        SelectionRequest(query=text, roles=(), visible_roles=()), visible_unsafe=False
    ),
}


@dataclass
class Request:
    text: str
    vector: np.ndarray
    sentences: np.ndarray


def requests_of(data: Prepared, cache: EmbeddingCache) -> list[Request]:
    """Each dev request with its vector and its sentences' (cached MiniLM)."""
    out = []
    for i, query in enumerate(data.queries):
        parts = split_sentences(embed_text(query.text))
        vecs = cache.get(parts, kind="query") if parts else np.zeros((0, 384))
        out.append(Request(query.text, data.query_vecs[i], vecs.astype(np.float32)))
    return out


def pool_of(data: Prepared, request: Request) -> dict[str, float]:
    """The semantic pool as /select computes it in process (services.select)."""
    table = data.snapshot.vectors
    assert table is not None
    size = data.snapshot.settings.candidate_pool
    rows = table.nearest_mixed(request.vector, request.sentences, size)
    if not hasattr(data.snapshot, "named_pool"):  # the code before issue 32's
        names = [tool.name for tool in data.snapshot.tools]
        if hasattr(rows, "renamed"):
            return rows.renamed(names.__getitem__)  # type: ignore[no-any-return]
        return {names[r]: s for r, s in rows.items()}
    return data.snapshot.named_pool(rows)  # type: ignore[no-any-return]


def answer(result: SelectionResult) -> dict[str, Any]:
    """Everything an answer says, but the time it took."""
    out = asdict(result)
    out["stats"].pop("elapsed_ms", None)
    return out


def answers(data: Prepared, cache: EmbeddingCache) -> Iterator[tuple[str, Any]]:
    for number, request in enumerate(requests_of(data, cache)):
        pool = pool_of(data, request)
        for way, make in WAYS.items():
            result = select(
                data.snapshot, make(request.text), semantic=pool, vector=request.vector
            )
            yield f"{data.name} #{number} {way}", answer(result)
        yield f"{data.name} #{number} pool", dict(pool)


def differences(path: str, a: Any, b: Any) -> Iterator[str]:
    """Where ``a`` and ``b`` differ (floats beyond TOLERANCE)."""
    if isinstance(a, float) and isinstance(b, float | int):
        if not (math.isclose(a, b, rel_tol=0, abs_tol=TOLERANCE[0]) or a == b):
            yield f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            yield f"{path}: keys {list(a)} != {list(b)}"
            return
        for key in a:
            yield from differences(f"{path}.{key}", a[key], b[key])
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            yield f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            yield from differences(f"{path}[{i}]", x, y)
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not np.allclose(np.asarray(a), np.asarray(b), rtol=0, atol=TOLERANCE[0]):
            yield f"{path}: arrays differ"
    elif a != b:
        yield f"{path}: {a!r} != {b!r}"


def record_or_check(args: argparse.Namespace, cache: EmbeddingCache) -> int:
    found: dict[str, Any] = {}
    for name in sets(args):
        data = prepare(name, args.limit, cache)
        found.update(answers(data, cache))
    if args.mode == "record":
        Path(args.file).write_bytes(pickle.dumps(found))
        print(f"recorded {len(found)} answers to {args.file}")
        return 0
    kept = pickle.loads(Path(args.file).read_bytes())
    wrong = [d for key in kept for d in differences(key, kept[key], found.get(key))]
    print(f"{len(kept)} answers checked: {len(wrong)} differences")
    print("\n".join(wrong[:30]))
    return 1 if wrong or set(kept) != set(found) else 0


def timed(args: argparse.Namespace, cache: EmbeddingCache) -> None:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        for name in sets(args):
            data = prepare(name, None, cache)
            stages = cpu_by_stage(data, cache, args.requests)
            text = ", ".join(f"{k} {np.mean(v):.2f}" for k, v in stages.items())
            print(f"{name}: CPU ms/request (mean of {args.requests}): {text}")
            if args.profile:
                profile(data, cache, args.requests, args.profile)


def cpu_by_stage(
    data: Prepared, cache: EmbeddingCache, count: int
) -> dict[str, list[float]]:
    """CPU ms per stage of /select's engine work for ``count`` requests, after
    ten warm-up requests."""
    backend = get_embedder_backend()
    from selection.adapters import pgvector

    fast = pgvector.sentence_encoder(backend)
    stages: dict[str, list[float]] = {k: [] for k in ("query", "sentences", "pool")}
    stages |= {"select": [], "total": [], "total (all threads)": []}
    stages["select, best of 3"] = []
    requests = requests_of(data, cache)
    for n, request in enumerate(requests[-10:] + requests[:count]):
        pgvector._query_cache.clear()
        text = embed_text(request.text)
        p0 = time.process_time()
        t0 = time.thread_time()
        pgvector.embed_query(text, backend)
        t1 = time.thread_time()
        parts = split_sentences(text)
        if parts:
            pgvector.embed_sentences(parts, backend, fast)
        t2 = time.thread_time()
        pool = pool_of(data, request)
        t3 = time.thread_time()
        select(data.snapshot, WAYS["agent"](request.text), semantic=pool)
        t4 = time.thread_time()
        p4 = time.process_time()
        best = min(select_cpu(data, request, pool) for _ in range(3))
        if n >= 10:
            spent_by_stage = (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0, p4 - p0)
            for key, spent in zip(stages, spent_by_stage, strict=False):
                stages[key].append(spent * 1000)
            stages["select, best of 3"].append(best * 1000)
    return stages


def select_cpu(data: Prepared, request: Request, pool: dict[str, float]) -> float:
    """CPU seconds of ``select`` alone for ``request`` (the agent's way)."""
    began = time.thread_time()
    select(data.snapshot, WAYS["agent"](request.text), semantic=pool)
    return time.thread_time() - began


def get_embedder_backend() -> Any:
    import django

    django.setup()
    from embeddings.backends import get_local_backend, local_static_encoder

    local_static_encoder(wait=True)
    return get_local_backend()


def profile(data: Prepared, cache: EmbeddingCache, count: int, top: int) -> None:
    requests = requests_of(data, cache)[:count]
    pools = [pool_of(data, r) for r in requests]
    profiler = cProfile.Profile(time.thread_time)
    profiler.enable()
    for request, pool in zip(requests, pools, strict=True):
        select(data.snapshot, WAYS["agent"](request.text), semantic=pool)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def sets(args: argparse.Namespace) -> list[str]:
    return list(DATASETS) if args.data == "all" else [args.data]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["record", "check", "time"])
    parser.add_argument("file", nargs="?", default="")
    parser.add_argument("--data", choices=[*DATASETS, "all"], default="all")
    parser.add_argument("--limit", type=int, default=None, help="first N requests")
    parser.add_argument("--requests", type=int, default=200, help="timed requests")
    parser.add_argument("--profile", type=int, default=0, help="top N functions")
    parser.add_argument("--exact", action="store_true", help="check floats bit for bit")
    args = parser.parse_args()
    TOLERANCE[0] = 0.0 if args.exact else TOLERANCE[0]
    cache = EmbeddingCache(get_embedder())
    if args.mode == "time":
        timed(args, cache)
        return 0
    return record_or_check(args, cache)


if __name__ == "__main__":
    sys.exit(main())
