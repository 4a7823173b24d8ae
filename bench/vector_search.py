"""/select with the semantic pool scored in process vs by pgvector, same run.

Run: ``.venv/bin/python -m config.devstack test -- .venv/bin/python
bench/vector_search.py`` (options: ``--size 4076``, ``--requests 200``).

Builds the catalog as ``bench/speed.py`` does (``bench-speed-<size>``, removed at
the end) and sends the same distinct queries (cold query-embedding cache, the
catalog's default scorer) through the select service (``select_tools``: snapshot,
embedding, pool, engine, definitions, audit row) twice, alternating per query:
once with the snapshot holding the vectors (``QUIVER_INPROCESS_VECTORS_MAX``
above the size) and once without (pgvector HNSW). Prints p50/p95 of the whole
call and p50 of each ``stats.timings_ms`` stage, and checks the two answers name
the same tools.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.speed as sp  # noqa: E402  (sets Django up)
from identity.access import access_for  # noqa: E402
from identity.models import ApiClient  # noqa: E402
from identity.services.clients import create_api_client  # noqa: E402
from selection.adapters import snapshots  # noqa: E402
from selection.requests import build_request  # noqa: E402
from selection.services import select as services  # noqa: E402
from selection.services.timings import STAGES  # noqa: E402

CLIENT = f"{sp.PREFIX}-vectors"
MODES = {"in process": 10_000_000, "pgvector": 0}


def one(built: sp.Built, user: Any, query: str, limit: int) -> tuple[float, Any]:
    """(wall ms, answer) of one selection with the given in-process limit."""
    sp.settings.QUIVER_INPROCESS_VECTORS_MAX = limit
    catalog = built.catalog
    data = sp.SelectInputSerializer(data={"catalog": catalog.slug, "query": query})
    data.is_valid(raise_exception=True)
    request = build_request(access_for(user), dict(data.validated_data))
    started = time.perf_counter()
    answer = services.select_tools(catalog, request, fmt="openai", actor=user)
    return (time.perf_counter() - started) * 1000, answer


def measure(built: sp.Built, user: Any, requests: int) -> dict[str, Any]:
    """Per mode: wall times and stage timings; and how many answers differed."""
    entries = {}
    for mode, limit in MODES.items():
        sp.settings.QUIVER_INPROCESS_VECTORS_MAX = limit
        snapshots.clear()
        snapshots.get_snapshot(built.catalog)
        entries[mode] = snapshots.kept_entry(built.catalog.pk)
    queries = sp.query_pool(sp.dataset_for(built.size))[: requests + 5]
    out: dict[str, Any] = {mode: {"wall": [], "stages": []} for mode in MODES}
    differ = 0
    for i, query in enumerate(queries):
        names = []
        for mode in sorted(MODES, key=lambda m: (m == "pgvector") == (i % 2 == 0)):
            sp.cold_caches()
            snapshots.keep(built.catalog.pk, entries[mode])
            wall, answer = one(built, user, query, MODES[mode])
            names.append(answer.names)
            if i >= 5:  # warm-up
                out[mode]["wall"].append(wall)
                out[mode]["stages"].append(answer.stats["timings_ms"])
        differ += names[0] != names[1]
    out["differ"] = differ
    return out


def table(size: int, out: dict[str, Any]) -> str:
    heads = ["mode", "p50", "p95", *[f"{s} p50" for s in STAGES if s != "total"]]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for mode in MODES:
        wall = sorted(out[mode]["wall"])
        p95 = wall[int(0.95 * (len(wall) - 1))]
        stages = [
            statistics.median(t[s] for t in out[mode]["stages"])
            for s in STAGES
            if s != "total"
        ]
        cells = [mode, statistics.median(wall), p95, *stages]
        lines.append(
            "| " + " | ".join(c if isinstance(c, str) else f"{c:.2f}" for c in cells)
        )
    lines.append(
        f"({size:,} tools; ms; answers naming different tools: {out['differ']})"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4076)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args(argv)
    sp.call_command("migrate", verbosity=0, interactive=False)
    sp.clean_up()
    try:
        built = sp.build_catalog(args.size, True)
        create_api_client(CLIENT, "agent", catalogs=[built.catalog.slug])
        user = ApiClient.objects.get(name=CLIENT).user
        sp.current_backend().embed_query("load the query model")
        out = measure(built, user, args.requests)
    finally:
        sp.clean_up()
    print(table(args.size, out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
