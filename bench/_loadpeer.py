"""The /select load bench's comparison with the in-process MiniLM peer (bench/load.py).

* ``install_static_encoder``: the static query encoder, as ``make run``'s worker
  trains it, from the bench cache when it was trained before;
* ``in_process_cpu_ms``: per query, the CPU time of the engine with its query
  encoding and of a whole /select through Django's handler, in the bench process
  (what /select computes, and what the framework adds to it);
* ``peer_and_engine`` / ``peer_table``: both, next to the peer's run
  (``bench/_selectpeer.py``) and the HTTP runs' throughput and web CPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._selectpeer import PeerResult, run_peer

ROOT = Path(__file__).resolve().parent.parent
STARTED = time.monotonic()


def say(message: str) -> None:
    elapsed = time.monotonic() - STARTED
    print(f"[load {elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)


def fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |"]
    lines.append("|" + "|".join("---:" for _ in headers) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def install_static_encoder(catalog: str) -> Path | None:
    """The static query encoder, from the bench cache or trained (20-160 s): the
    path it was installed at (for the caller to remove), or None when one was
    there already."""
    from catalog.services.query_encoder import build_query_encoder
    from embeddings import backends

    path = backends.static_encoder_path()
    if path.exists():
        say(f"static encoder: {path.name} is there already (kept)")
        return None
    cached = ROOT / ".quiver" / "bench-cache" / f"static-{catalog}-{path.name}"
    if cached.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cached, path)
        say(f"static encoder: {path.name} from the bench cache")
    else:
        say("static encoder: training it on the bench catalog ...")
        build_query_encoder(progress=say)
        shutil.copyfile(path, cached)
    return path


@dataclasses.dataclass
class InProcess:
    """Per query, this thread's CPU ms: the engine alone, and a whole /select."""

    engine: list[float] = dataclasses.field(default_factory=list)
    request: list[float] = dataclasses.field(default_factory=list)


def in_process_cpu_ms(
    slug: str, authorization: str, queries: list[str], count: int
) -> InProcess:
    """CPU ms per query in this process (one BLAS thread, as the web workers), both
    with cold caches, one after the other for each query:

    * the engine with its query encoding: the semantic pool exactly as /select
      computes it (query and sentence vectors, in-process cosine) and the ranking
      (an agent key's request: no roles, no unsafe tools);
    * the whole ``POST /api/v1/select`` through Django's handler with the same key
      (middleware, DRF, key, rate limit, input, catalog and settings, the engine,
      definitions, the audit row, rendering): all of the web's work but gunicorn's.
    """
    from django.test import Client

    import bench.speed as speed
    from catalog.models import Catalog
    from embeddings.backends import local_static_encoder
    from selection.adapters.snapshots import get_snapshot
    from selection.engine.engine import select
    from selection.engine.types import SelectionRequest
    from selection.services.select import NamedSnapshot, semantic_for

    catalog = Catalog.objects.get(slug=slug)
    named = NamedSnapshot(*get_snapshot(catalog))
    local_static_encoder(wait=True)  # as the web's warm-up: loaded before timing
    web = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=authorization)

    def engine(text: str) -> float:
        request = SelectionRequest(query=text, roles=(), visible_roles=())
        request = dataclasses.replace(request, visible_unsafe=False)
        began = time.thread_time()
        pool, vector = semantic_for(catalog, named, request)
        select(named.snapshot, request, semantic=pool, vector=vector)
        return (time.thread_time() - began) * 1000

    def whole(text: str) -> float:
        began = time.thread_time()
        body = {"catalog": slug, "query": text, "explain": False}
        response = web.post("/api/v1/select", body, content_type="application/json")
        spent = (time.thread_time() - began) * 1000
        if response.status_code != 200:
            raise SystemExit(f"in-process /select: {response.content[:300]!r}")
        return spent

    out = InProcess()
    for number, text in enumerate(queries[-10:] + queries[:count]):
        speed.cold_caches()
        mine = engine(text)
        speed.cold_caches()  # the request embeds the query again, as a new one
        request = whole(text)
        if number >= 10:  # the first ten load the models and the code
            out.engine.append(mine)
            out.request.append(request)
    return out


def peer_and_engine(
    args: argparse.Namespace, ctx: dict[str, Any]
) -> tuple[PeerResult | None, InProcess]:
    """The peer's run (``--peer-python``) and the engine's CPU per request, after
    the HTTP runs (nothing else of the bench's runs meanwhile)."""
    import bench.speed as speed

    engine = InProcess()
    if args.engine_requests > 0:
        say(f"in process: {args.engine_requests} queries, engine and whole request")
        engine = in_process_cpu_ms(
            ctx["slug"], ctx["headers"]["Authorization"], ctx["queries"],
            args.engine_requests,
        )  # fmt: skip
    if not args.peer_python:
        return None, engine
    src = speed.source(args.catalog, True)
    say(f"peer: {args.peer_processes} process(es) for {args.duration:g}s")
    peer = run_peer(
        args.peer_python, src.vectors[: ctx["tools"]], ctx["queries"],
        args.duration, args.peer_processes,
    )  # fmt: skip
    say(f"peer: {peer.answers} answers, {peer.rate:.1f}/s")
    return peer, engine


def peer_table(
    runs: list[Any],
    peer: PeerResult | None,
    own: InProcess,
    args: argparse.Namespace,
) -> str:
    """/select against the in-process peer (issue 32's goals: throughput >= 3x
    the peer's, web CPU a request <= 2x the engine's own)."""
    if peer is None and not own.engine:
        return ""
    engine = _mean(own.engine)
    rows = []
    for r in runs:
        rate = r.result.requests / r.result.wall_s if r.result.wall_s else 0.0
        service = r.web_cpu_ms + r.db_cpu_ms + r.redis_cpu_ms
        rows.append([
            str(r.workers), fmt(rate),
            f"{fmt(peer.rate)} ({peer.processes})" if peer else "—",
            fmt(rate / peer.rate, 2) if peer and peer.rate else "—",
            f"{fmt(r.web_cpu_ms)} + {fmt(r.db_cpu_ms)} + {fmt(r.redis_cpu_ms)}",
            fmt(peer.cpu_ms) if peer else "—",
            fmt(peer.cpu_ms / service, 2) if peer and service else "—",
            fmt(engine), fmt(r.web_cpu_ms / engine, 2) if engine else "—",
            f"{fmt(peer.pct(50))} / {fmt(peer.pct(95))}" if peer else "—",
        ])  # fmt: skip
    return "\n".join([
        "\n### Against the in-process MiniLM peer (same queries, same cores)\n",
        table(
            ["workers", "/select req/s", "peer answers/s (processes)",
             "select / peer req/s (>= 3)",
             "CPU ms/req: web + Postgres + Redis", "peer CPU ms/answer",
             "peer CPU / service CPU (>= 3)", "engine CPU ms/req in process",
             "web CPU / engine (<= 2)", "peer p50 / p95 ms"],
            rows,
        ),
        _in_process_line(own),
        "Peer: "
        + (f"{peer.answers:,} answers in {peer.wall_s:.1f}s, load average "
           f"{os.getloadavg()[0]:.1f} after it." if peer else "not run."),
    ])  # fmt: skip


def _in_process_line(own: InProcess) -> str:
    if not own.engine:
        return ""
    engine, whole = _mean(own.engine), _mean(own.request)
    return (
        f"\nIn this process, the same {len(own.engine)} queries one after the "
        f"other (cold caches, one thread): engine with its query encoding "
        f"{engine:.2f} ms CPU (p50 {np.percentile(own.engine, 50):.2f}), the "
        f"whole /select through Django's handler {whole:.2f} ms (p50 "
        f"{np.percentile(own.request, 50):.2f}): whole / engine "
        f"**{whole / engine:.2f}** (<= 2), the framework {whole - engine:.2f} ms."
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
