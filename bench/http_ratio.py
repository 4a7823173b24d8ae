"""/select over HTTP against the dense MiniLM peer and the server's own floor.

Run (one line; the peer needs torch + sentence-transformers, the ``bench`` extra):

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/http_ratio.py

Options: ``--sizes 200,4076`` (MetaTool's 199 tools, Seal-Tools' 4,076),
``--requests N`` (200 per size), ``--warmup N`` (10), ``--block N`` (20),
``--keep``, ``--static``
(train the static query encoder on the bench catalogs' tools first; the second
server then runs without it, ``QUIVER_STATIC_SENTENCES=false``, instead of
writing the audit row first).

Catalogs are built as ``bench/speed.py`` builds them. One ``gunicorn --workers 1
--threads 1`` serves them; one bearer key (``agent`` scope). For each of N distinct
dev queries (shuffled with a fixed seed, never sent before, so the query
embedding and the answer are computed each time), in blocks of ``--block``
queries so load drift hits all three alike: the peer answers the block, then each
query of the block goes to the servers. (Until 2026-11-24 the peer answered each
query right before its requests: its ~20 ms of CPU then made the scheduler put the
server's database backend on the web worker's core, which inflated the server's
stages, the audit write's most: 0.59 -> 0.93 ms p50 on Seal-Tools.)

* **peer**: in this process, the "dense MiniLM selector": sentence-transformers
  ``encode`` on one torch thread + cosine over the catalog's tool vectors + top 10
  (numpy's BLAS limited to one thread as well);
* **select**: ``POST /api/v1/select`` (``explain`` off, the catalog's default
  scorer), client-measured, and the answer's ``stats.timings_ms``;
* **no-op read**: ``GET /api/v1/catalogs/{slug}/`` with the same key.

* **select, row written first**: the same request to a second gunicorn with
  ``QUIVER_AUDIT_SEND_EARLY=false``, which writes each audit row on the request's
  connection before rendering (as before audit/writer.py), in the same rounds
  (with ``--static``: a second gunicorn without the static encoder instead);
* **select without the audit write**: a third gunicorn serving
  ``bench/_wsgi_without_audit.py`` (the app with the selection's audit write taken
  out; bench only, Quiver has no such switch), so "what the write adds to /select
  p50, with and without, in the same run" (issue 9) is measured, not derived. The
  three servers take turns going first.

The audit write's time on the answer's path is the answer's own
``timings_ms.audit`` (building the row and sending its INSERT) plus
``Server-Timing: audit_wait`` (how long the rendered answer then waited for the
row's COMMIT); p50 of ``total - audit`` is the request without the handoff.
Targets (issue #12, #9): select p50 <= 0.35x peer p50, p95 <= 0.5x peer p95,
select p50 <= 3x no-op p50, the audit write adds <= 1 ms to select p50.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench import speed  # noqa: E402  (sets up Django)
from catalog.services.query_encoder import build_query_encoder  # noqa: E402
from embeddings import backends  # noqa: E402
from identity.services.clients import create_api_client  # noqa: E402
from selection.services.timings import STAGES  # noqa: E402

TARGETS = {"peer_p50": 0.35, "peer_p95": 0.5, "noop_p50": 3.0, "audit_ms": 1.0}
TOP_K = 10
WITHOUT_AUDIT = "bench._wsgi_without_audit:application"


def peer_encoder() -> Callable[[str], np.ndarray]:
    """sentence-transformers MiniLM on one torch thread (the bench extra)."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from threadpoolctl import threadpool_limits
    except ImportError as exc:
        raise SystemExit(f"the peer needs pip install -e '.[bench]': {exc}") from exc
    torch.set_num_threads(1)
    # One thread for the peer's cosine too: numpy's OpenBLAS ran it on two, whose
    # threads spin after each call, taking a core from the server under test.
    threadpool_limits(1)
    model = SentenceTransformer(backends.local_model_path(), device="cpu")

    def encode(text: str) -> np.ndarray:
        return np.asarray(
            model.encode(text, normalize_embeddings=True, show_progress_bar=False)
        )

    return encode


def peer_select(
    encode: Callable[[str], np.ndarray], matrix: np.ndarray, text: str
) -> float:
    """Milliseconds for one peer answer: embed, cosine over the catalog, top 10."""
    started = time.perf_counter()
    scores = matrix @ encode(text).astype(np.float32)
    top = np.argpartition(-scores, TOP_K)[:TOP_K]
    top[np.argsort(-scores[top])]
    return (time.perf_counter() - started) * 1000


@dataclass
class Run:
    label: str
    tools: int
    peer: list[float] = field(default_factory=list)
    select: list[float] = field(default_factory=list)
    noop: list[float] = field(default_factory=list)
    select_sync: list[float] = field(default_factory=list)
    unaudited: list[float] = field(default_factory=list)
    audit_wait: list[float] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)
    load: float = 0.0


def timed(call: Callable[[], httpx.Response]) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise SystemExit(f"HTTP {response.status_code}: {response.text[:500]}")
    return elapsed, response


def measure(
    b: speed.Built,
    client: httpx.Client,
    bases: tuple[str, str, str],
    encode: Callable[[str], np.ndarray],
    args: argparse.Namespace,
) -> Run:
    """``bases``: the server under test, the second server (row written first, or
    no static encoder) and the server without the audit write."""
    src = speed.source(speed.dataset_for(b.size), True)
    matrix = np.ascontiguousarray(src.vectors[: b.tools], dtype=np.float32)
    pool = speed.query_pool(speed.dataset_for(b.size))
    queries, warmup = pool[: args.requests], pool[-args.warmup :]
    slug = b.catalog.slug
    noop_url = f"{bases[0]}/api/v1/catalogs/{slug}/"

    def select(base: str, text: str) -> tuple[float, httpx.Response]:
        url = f"{base}/api/v1/select"
        return timed(lambda: client.post(url, json={"catalog": slug, "query": text}))

    for text in warmup:
        for base in bases:
            select(base, text)
        timed(lambda: client.get(noop_url))
        peer_select(encode, matrix, text)
    run = Run(b.label, b.tools, stages={name: [] for name in STAGES})
    for start in range(0, len(queries), args.block):
        block = queries[start : start + args.block]
        # The peer's block first: its CPU work right before each request made
        # the scheduler place the server's database backend on the web worker's
        # core (the audit stage went bimodal, 0.6 -> 0.9 ms p50).
        run.peer += [peer_select(encode, matrix, text) for text in block]
        for number, text in enumerate(block, start):
            turn = number % len(bases)  # the servers take turns going first
            for base in bases[turn:] + bases[:turn]:
                ms, response = select(base, text)
                if base == bases[1]:
                    run.select_sync.append(ms)
                elif base == bases[2]:
                    run.unaudited.append(ms)
                else:
                    _record(run, ms, response)
            run.noop.append(timed(lambda: client.get(noop_url))[0])
    run.load = os.getloadavg()[0]
    return run


def _record(run: Run, ms: float, response: httpx.Response) -> None:
    run.select.append(ms)
    for name, value in response.json()["stats"]["timings_ms"].items():
        run.stages.setdefault(name, []).append(float(value))
    run.audit_wait.append(audit_wait_ms(response))


def audit_wait_ms(response: httpx.Response) -> float:
    """``Server-Timing: audit_wait;dur=N`` (0 when the row was written inline)."""
    for part in response.headers.get("Server-Timing", "").split(","):
        name, _, duration = part.strip().partition(";dur=")
        if name == "audit_wait":
            return float(duration)
    return 0.0


def p(samples: Sequence[float] | np.ndarray, q: float) -> float:
    return float(np.percentile(np.asarray(samples, dtype=float), q))


def ratio_table(runs: list[Run], static: bool) -> str:
    second = "without the static encoder" if static else "row written first"
    headers = [
        "catalog", "peer p50 / p95", "select p50 / p95", "no-op p50 / p95",
        "select/peer p50 (<= 0.35)", "select/peer p95 (<= 0.5)",
        "select/no-op p50 (<= 3)",
        "select p50 without the audit write (what it adds, <= 1 ms)",
        "audit on the path p50", "server total p50 / without audit",
        f"select p50, {second}", "load",
    ]  # fmt: skip
    rows = []
    for r in runs:
        total, audit = np.asarray(r.stages["total"]), np.asarray(r.stages["audit"])
        on_path = audit + np.asarray(r.audit_wait)
        rows.append([
            f"{r.label} ({r.tools:,})",
            f"{p(r.peer, 50):.1f} / {p(r.peer, 95):.1f}",
            f"{p(r.select, 50):.1f} / {p(r.select, 95):.1f}",
            f"{p(r.noop, 50):.1f} / {p(r.noop, 95):.1f}",
            f"{p(r.select, 50) / p(r.peer, 50):.2f}",
            f"{p(r.select, 95) / p(r.peer, 95):.2f}",
            f"{p(r.select, 50) / p(r.noop, 50):.2f}",
            f"{p(r.unaudited, 50):.1f} ({p(r.select, 50) - p(r.unaudited, 50):+.2f})",
            f"{p(on_path, 50):.2f} ({p(audit, 50):.2f} + {p(r.audit_wait, 50):.2f})",
            f"{p(total, 50):.1f} / {p(total - audit, 50):.1f}",
            f"{p(r.select_sync, 50):.1f}",
            f"{r.load:.1f}",
        ])  # fmt: skip
    return speed.table(headers, rows)


def stage_table(runs: list[Run]) -> str:
    names = [n for n in STAGES if n != "total"] + ["total"]
    headers = ["catalog", *names, "client − total"]
    rows = []
    for r in runs:
        client_gap = p(r.select, 50) - p(r.stages["total"], 50)
        cells = [f"{p(r.stages[n], 50):.2f}" for n in names]
        rows.append([f"{r.label} ({r.tools:,})", *cells, f"{client_gap:.2f}"])
    return speed.table(headers, rows)


def report(runs: list[Run], args: argparse.Namespace) -> str:
    return "\n".join([
        f"## /select over HTTP vs the dense MiniLM peer ({args.requests} distinct "
        f"cold queries per catalog, load average at start {args.load_start:.1f})",
        "",
        "ms; peer in process (1 torch thread), select and no-op client-measured",
        "",
        ratio_table(runs, args.static),
        "",
        "### Per-stage p50 (stats.timings_ms, ms)",
        "",
        stage_table(runs),
    ])  # fmt: skip


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200,4076")
    parser.add_argument(
        "--static",
        action="store_true",
        help="build the static query encoder from the bench catalogs first, and "
        "A/B it: the second server runs with QUIVER_STATIC_SENTENCES=false",
    )
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument(
        "--block", type=int, default=20, help="queries per block: peer, then HTTP"
    )
    parser.add_argument("--keep", action="store_true", help="keep the catalogs")
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.requests < 1 or args.warmup < 1 or args.block < 1:
        parser.error("--requests, --warmup and --block must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    args.load_start = os.getloadavg()[0]
    call_command("migrate", verbosity=0, interactive=False)
    speed.clean_up()
    encode = peer_encoder()
    log_dir = Path(tempfile.mkdtemp(prefix="bench-ratio-"))
    runs: list[Run] = []
    try:
        built = [speed.build_catalog(size, True) for size in args.sizes]
        # Three servers share the key: far more than the default 1,200 a minute
        # (the limit is still checked on every request).
        _, key = create_api_client(
            speed.CLIENT_NAME,
            "agent",
            catalogs=[b.catalog.slug for b in built],
            rate_limit_per_minute=1_000_000,
        )
        headers = {"Authorization": f"Bearer {key}"}
        inline = {"QUIVER_AUDIT_SEND_EARLY": "false"}
        if args.static:
            speed.say("training the static query encoder on the bench catalogs")
            build_query_encoder(progress=speed.say)
            inline = {"QUIVER_STATIC_SENTENCES": "false"}
        with (
            speed.server(log_dir) as web,
            speed.server(log_dir, inline) as web_inline,
            speed.server(log_dir, app=WITHOUT_AUDIT) as web_unaudited,
            httpx.Client(headers=headers, timeout=900) as client,
        ):
            for b in built:
                speed.say(f"{b.tools:,} tools: {args.requests} interleaved rounds")
                urls = (web.url, web_inline.url, web_unaudited.url)
                runs.append(measure(b, client, urls, encode, args))
    finally:
        if args.static:  # later test runs share this state directory
            backends.static_encoder_path().unlink(missing_ok=True)
        if not args.keep:
            speed.clean_up()
        shutil.rmtree(log_dir, ignore_errors=True)
    print(report(runs, args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
