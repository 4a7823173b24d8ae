"""The next /select after one catalog edit, at 4,076 and 100,000 tools.

Run: ``.venv/bin/python -m config.devstack test -- .venv/bin/python
bench/snapshot_refresh.py`` (options: ``--sizes 4076,100000``, ``--edits 9``,
``--requests 60``, ``--keep``, ``--reuse``: keep the catalogs at the end and use
them again next time instead of building them).

The catalogs are built exactly as ``bench/speed.py`` builds them (Seal-Tools, and
Seal-Tools repeated with perturbed vectors above 4,076 tools; catalogs
``bench-speed-<size>``, removed at the end). In this process, through the select
service (``select_tools``, the view's whole path below HTTP: snapshot, query
embedding, pool, engine, definitions, audit row), with distinct cold queries:

* ``normal``: p50 and p95 of ``--requests`` selections on the current snapshot
  (the last line: the largest size's p95 over the smallest's, target at most 2);
* ``after edit``: for each of ``--edits`` tools, change its description with
  ``update_tool`` and time the next selection (median and max), which patches the
  snapshot; ``extra`` is its median minus the normal p50 (target: at most 50 ms);
* ``after disable`` / ``create`` / ``delete``: the same for one ``set_tool_status``,
  one new tool and one ``delete_tool``;
* ``rebuild``: a full snapshot build (what every edit cost before), and the
  wait, after the last change, for the background lexical index rebuild that
  follows text edits above ``QUIVER_SNAPSHOT_INLINE_INDEX_MAX`` tools
  (``QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY`` after the first one; no request waits
  for it; the edits follow each other as they come, one selection apart).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.speed as sp  # noqa: E402  (sets Django up)
from catalog.models import Tool  # noqa: E402
from catalog.services.tools import (  # noqa: E402
    create_tool,
    delete_tool,
    set_tool_status,
    tool_to_spec,
    update_tool,
)
from identity.access import access_for  # noqa: E402
from identity.models import ApiClient  # noqa: E402
from identity.services.clients import create_api_client  # noqa: E402
from selection.adapters import snapshots  # noqa: E402
from selection.requests import build_request  # noqa: E402
from selection.services import select as services  # noqa: E402

CLIENT = f"{sp.PREFIX}-refresh"


class Timer:
    """Times selections with fresh queries from a pool."""

    def __init__(self, built: sp.Built, user: Any, queries: list[str]) -> None:
        self.built, self.user, self.queries = built, user, iter(queries)

    def select(self) -> tuple[float, float]:
        """(wall ms of one selection, its snapshot stage ms)."""
        catalog = self.built.catalog
        catalog.refresh_from_db()
        query = next(self.queries)
        data = sp.SelectInputSerializer(data={"catalog": catalog.slug, "query": query})
        data.is_valid(raise_exception=True)
        request = build_request(access_for(self.user), dict(data.validated_data))
        started = time.perf_counter()
        answer = services.select_tools(catalog, request, fmt="openai", actor=self.user)
        wall = (time.perf_counter() - started) * 1000
        return wall, float(answer.stats["timings_ms"]["snapshot"])


def after(timer: Timer, change: Any) -> tuple[float, float]:
    """(next selection ms, its snapshot ms)."""
    change()
    return timer.select()


def edit(tool: Tool, k: int) -> None:
    spec = tool_to_spec(tool)
    text = f"{spec.description} (revised {k})"
    update_tool(tool, replace(spec, description=text), actor=None)


def measure(built: sp.Built, user: Any, args: argparse.Namespace) -> dict[str, Any]:
    catalog = built.catalog
    snapshots.clear()
    started = time.perf_counter()
    snapshots.get_snapshot(catalog)
    full_s = time.perf_counter() - started
    pool = sp.query_pool(sp.dataset_for(built.size))
    timer = Timer(built, user, pool)
    for _ in range(3):
        timer.select()  # model and caches loaded
    normal = [timer.select()[0] for _ in range(args.requests)]
    active = Tool.objects.filter(catalog=catalog, status="active")
    tools = list(active.order_by("?")[: args.edits + 3])
    edits = [after(timer, lambda t=t, k=k: edit(t, k)) for k, t in enumerate(tools)]
    disable = after(timer, lambda: set_tool_status(tools[-1], "disabled", actor=None))
    create = after(
        timer,
        lambda: create_tool(
            catalog,
            sp.ToolSpec(
                name=f"bench_new_tool_{time.time_ns()}",
                description="A new tool.",
                parameters={"type": "object", "properties": {}},
            ),
            actor=None,
        ),
    )
    delete = after(timer, lambda: delete_tool(tools[-2], actor=None))
    started = time.perf_counter()
    snapshots.wait_for_rebuilds(600)
    index_s = time.perf_counter() - started
    p50 = statistics.median(normal)
    walls = [w for w, _ in edits]
    return {
        "size": built.tools,
        "full_s": full_s,
        "normal": p50,
        "p95": sp.pct(normal, 95),
        "edit_p50": statistics.median(walls),
        "edit_max": max(walls),
        "extra": statistics.median(walls) - p50,
        "edit_snapshot": statistics.median([s for _, s in edits]),
        "disable": disable[0],
        "create": create[0],
        "delete": delete[0],
        "index_s": index_s,
    }


def table(results: list[dict[str, Any]]) -> str:
    head = (
        "| tools | full build (s) | normal p50 / p95 | after edit p50 / max | extra | "
        "refresh part | after disable | after create | after delete | "
        "background index (s) |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in results:
        lines.append(
            f"| {r['size']:,} | {r['full_s']:.1f} | {r['normal']:.1f} / "
            f"{r['p95']:.1f} | "
            f"{r['edit_p50']:.1f} / {r['edit_max']:.1f} | {r['extra']:+.1f} | "
            f"{r['edit_snapshot']:.1f} | {r['disable']:.1f} | {r['create']:.1f} | "
            f"{r['delete']:.1f} | {r['index_s']:.1f} |"
        )
    big, small = (
        max(results, key=lambda r: r["size"]),
        min(results, key=lambda r: r["size"]),
    )
    ratio = big["p95"] / small["p95"]
    return "\n".join(lines) + (
        f"\n(milliseconds unless marked; in process; p95 {big['size']:,} / "
        f"{small['size']:,} tools: {ratio:.2f}x)"
    )


def catalog_for(size: int, reuse: bool) -> sp.Built:
    """The size's bench catalog: the one a ``--reuse`` run left, or a new one."""
    slug = f"{sp.PREFIX}-{size}"
    found = sp.Catalog.objects.filter(slug=slug).first()
    if reuse and found is not None:
        count = Tool.objects.filter(catalog=found).count()
        return sp.Built(size, found, "reused", count, 0.0, 0.0)
    if found is not None:
        sp.drop_catalog(found)
    sp.say(f"building the {size:,}-tool catalog ...")
    return sp.build_catalog(size, True)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4076,100000")
    parser.add_argument("--edits", type=int, default=9)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args(argv)
    keep = args.keep or args.reuse
    sp.call_command("migrate", verbosity=0, interactive=False)
    if not args.reuse:
        sp.clean_up()
    results = []
    start_load = load()
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            built = catalog_for(size, args.reuse)
            name = f"{CLIENT}-{size}"
            if not ApiClient.objects.filter(name=name).exists():
                create_api_client(name, "agent", catalogs=[built.catalog.slug])
            user = ApiClient.objects.get(name=name).user
            results.append(measure(built, user, args))
            sp.say(str(results[-1]))
    finally:
        if not keep:
            sp.clean_up()
    print(table(results), flush=True)
    print(f"{start_load} at the start, {load()} at the end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
