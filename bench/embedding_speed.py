"""Time the local embedding paths: query latency and document throughput.

Run: ``.venv/bin/python bench/embedding_speed.py [--queries N] [--docs N]``; with
the bench extra installed (``pip install -e '.[bench]'``) the torch
sentence-transformers peer is timed too, else its rows are skipped.

Query latency is measured on a fixed set of short, agent-style requests and on
one long request, one text at a time, everything on one thread (p50/p95 wall and
p50 CPU of the warm calls). Document throughput embeds the ``embedding_text`` of
the first 512 Sealtools tools in batches of 64 on one thread. Nothing is
downloaded; the bundled model is used.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from catalog.embedding_text import embedding_text  # noqa: E402
from catalog.spec import ToolSpec  # noqa: E402
from embeddings import backends  # noqa: E402

TOOLS_PATH = (
    Path(__file__).resolve().parent.parent.parent
    / "shared/bench/data/sealtools/tools.jsonl"
)
QUERIES = [
    "what's the weather in Paris tomorrow",
    "send an email to my manager about the delay",
    "convert 100 usd to eur",
    "find flights from Berlin to Tokyo next Friday",
    "create a calendar event for the team standup at 9am",
    "search the web for recent news about electric cars",
    "translate this paragraph into Spanish",
    "analyze DNA evidence from the crime scene",
    "book a table for two at an Italian restaurant",
    "get the current stock price of ACME",
]


def load_tools(path: Path, limit: int) -> list[ToolSpec]:
    """The first ``limit`` tools of a JSONL file, keeping the fields the text uses."""
    specs = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if len(specs) >= limit:
                break
            row = json.loads(line)
            specs.append(
                ToolSpec(
                    name=row["name"],
                    description=row.get("description") or "",
                    parameters=row.get("parameters"),
                    category=row.get("category") or "",
                    tags=list(row.get("tags") or []),
                )
            )
    return specs


def time_queries(embed: Callable[[str], np.ndarray], rounds: int) -> dict[str, float]:
    """Cold (first call) and warm p50/p95 wall latency, and warm CPU p50, in ms.

    CPU time (all threads of the process) is reported too because it is what the
    embedding costs, independent of other processes competing for the cores.
    """
    start = time.perf_counter()
    embed(QUERIES[0])
    cold = (time.perf_counter() - start) * 1000
    wall, cpu = [], []
    for i in range(rounds):
        text = QUERIES[i % len(QUERIES)]
        start, start_cpu = time.perf_counter(), time.process_time()
        embed(text)
        cpu.append((time.process_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start) * 1000)
    return {
        "cold": cold,
        "p50": statistics.median(wall),
        "p95": float(np.percentile(wall, 95)),
        "cpu": statistics.median(cpu),
    }


def time_documents(embed: Callable[[list[str]], np.ndarray], texts: list[str]) -> float:
    """Texts per second for one ``embed`` call over all ``texts``."""
    start = time.perf_counter()
    embed(texts)
    return len(texts) / (time.perf_counter() - start)


LONG_REQUEST = (
    "I need to analyze DNA evidence from a crime scene, then book a flight to Tokyo "
    "for the lab team, send the report to the chief inspector by email, convert the "
    "lab's invoice from yen to euros, and finally check what the weather will be "
    "like when they land, plus any public holidays that week that could delay us."
)


def _torch_paths() -> list[tuple[str, Callable[[str], np.ndarray]]]:
    """sentence-transformers on 1 thread (the bench extra), or nothing if absent."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("torch rows skipped: pip install -e '.[bench]' for the peer")
        return []
    torch.set_num_threads(1)
    model = SentenceTransformer(backends.local_model_path(), device="cpu")
    return [
        (
            "torch sentence-transformers, 1 thr",
            lambda text: model.encode(text, normalize_embeddings=True),
        )
    ]


def _query_paths() -> list[tuple[str, Callable[[str], np.ndarray]]]:
    """Every run-time query path at 1 thread, plus the torch peer when installed."""
    onnx = backends.local_onnx_encoder()
    numpy_encoder = backends.local_numpy_encoder()
    return [
        *_torch_paths(),
        ("numpy encoder, 1 thread", numpy_encoder.encode),
        ("onnx fp32, 1 thread", lambda t: onnx.encode(t, precision="fp32")),
        ("onnx int8 (queries), 1 thread", lambda t: onnx.encode(t, precision="int8")),
    ]


def query_table(rounds: int) -> None:
    """Print query latency (short agent queries, then one long request) per path."""
    start = time.perf_counter()
    backends.local_onnx_encoder().files()
    print(f"onnx graphs ready in {time.perf_counter() - start:.1f}s (built if new)")
    encoder = backends.local_numpy_encoder()
    pieces = np.mean([len(encoder.token_ids(q)) for q in QUERIES])
    long_pieces = len(encoder.token_ids(LONG_REQUEST))
    print(
        f"{'query path':36s} {'p50 ms':>8s} {'p95 ms':>8s} {'cpu p50':>8s}"
        f"   long: {'p50 ms':>7s} {'p95 ms':>7s}"
        f"  ({pieces:.0f} / {long_pieces} word pieces)"
    )
    with threadpool_limits(limits=1, user_api="blas"):
        for label, embed in _query_paths():
            row = time_queries(embed, rounds)
            long = time_queries(lambda _t, e=embed: e(LONG_REQUEST), rounds // 4)
            print(
                f"{label:36s} {row['p50']:8.2f} {row['p95']:8.2f} {row['cpu']:8.2f}"
                f"         {long['p50']:7.2f} {long['p95']:7.2f}"
            )


def document_table(count: int) -> None:
    """Print document throughput (texts/s) of the batch paths at 1 thread."""
    texts = [embedding_text(spec) for spec in load_tools(TOOLS_PATH, count)]
    mean_chars = sum(map(len, texts)) / len(texts)
    print(f"\n{len(texts)} tool texts, mean {mean_chars:.0f} chars, batch 64")
    print(f"{'document path':36s} {'texts/s':>8s}")
    for engine in ("numpy", "onnx"):
        local = backends.LocalMiniLMBackend(batch_size=64, threads=1, engine=engine)
        local.embed_documents(texts[:8])  # load outside the timing
        rate = time_documents(local.embed_documents, texts)
        print(f"{f'{engine} fp32, 1 thread':36s} {rate:8.1f}")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return
    torch.set_num_threads(1)
    model = SentenceTransformer(backends.local_model_path(), device="cpu")
    model.max_seq_length = backends.DOCUMENT_MAX_TOKENS + 2
    rate = time_documents(lambda t: model.encode(t, batch_size=64), texts)
    print(f"{'torch sentence-transformers, 1 thr':36s} {rate:8.1f}")


def main() -> None:
    """Parse arguments and print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200, help="warm query calls")
    parser.add_argument("--docs", type=int, default=512, help="tools to embed")
    args = parser.parse_args()
    print(f"cpus={os.cpu_count()} load before={os.getloadavg()[0]:.2f}")
    query_table(args.queries)
    document_table(args.docs)
    print(f"load after={os.getloadavg()[0]:.2f} (load > cpus inflates wall times)")


if __name__ == "__main__":
    main()
