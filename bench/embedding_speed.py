"""Time the local embedding paths: query latency (torch vs numpy) and doc throughput.

Run: ``.venv/bin/python bench/embedding_speed.py [--queries N] [--docs N]``.

Query latency is measured on a fixed set of short, agent-style requests, one text
at a time: "cold" is the first call after the model is loaded (first-touch page
faults, lazy init), "warm" the p50/p95 of the following calls. Document throughput
embeds the ``embedding_text`` of the first 512 Sealtools tools in one call per
batch size. Nothing is downloaded; the bundled model is used.
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

from catalog.embeddings import backends  # noqa: E402
from catalog.embeddings.text import embedding_text  # noqa: E402
from catalog.spec import ToolSpec  # noqa: E402

TOOLS_PATH = Path("/work/shared/bench/data/sealtools/tools.jsonl")
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


def query_table(rounds: int) -> None:
    """Print query latency for torch and numpy, at 1 thread and at the default.

    Both models are loaded first (load time printed); the first row of each engine
    therefore shows a true first-call "cold" figure, later rows are already warm.
    """
    start = time.perf_counter()
    backends.local_numpy_encoder()
    numpy_load = time.perf_counter() - start
    start = time.perf_counter()
    backends._torch_model()
    torch_load = time.perf_counter() - start
    print(f"load: numpy encoder {numpy_load:.2f}s, torch model {torch_load:.2f}s")
    local = backends.LocalMiniLMBackend(cache_size=0)
    encoder = backends.local_numpy_encoder()
    paths: list[tuple[str, Callable[[str], np.ndarray], int | None]] = [
        ("torch BertModel, threads=1", local.embed_query_torch, 1),
        ("torch BertModel, default threads", local.embed_query_torch, None),
        ("numpy encoder, BLAS threads=1", local.embed_query, None),
        ("numpy encoder, default threads", encoder.encode, None),
    ]
    print(
        f"{'query path':34s} {'cold ms':>8s} {'p50 ms':>8s} {'p95 ms':>8s}"
        f" {'cpu p50':>8s}"
    )
    for number, (label, embed, torch_threads) in enumerate(paths):
        row = _with_torch_threads(
            torch_threads, lambda e=embed: time_queries(e, rounds)
        )
        cold = f"{row['cold']:8.1f}" if number % 2 == 0 else f"{'(warm)':>8s}"
        print(
            f"{label:34s} {cold} {row['p50']:8.2f} {row['p95']:8.2f} {row['cpu']:8.2f}"
        )


def _with_torch_threads(
    threads: int | None, run: Callable[[], dict[str, float]]
) -> dict[str, float]:
    """Run ``run`` with torch's intra-op thread count set, then restore it."""
    import torch

    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return run()
    finally:
        torch.set_num_threads(before)


def document_table(count: int) -> None:
    """Print document throughput for the torch and numpy batch paths."""
    texts = [embedding_text(spec) for spec in load_tools(TOOLS_PATH, count)]
    mean_chars = sum(map(len, texts)) / len(texts)
    print(f"\n{len(texts)} tool texts, mean {mean_chars:.0f} chars")
    print(f"{'document path':34s} {'texts/s':>8s}")
    encoder = backends.local_numpy_encoder()
    for threads in (None, 1):
        label = "default threads" if threads is None else f"threads={threads}"
        for batch_size in (16, 64):
            local = backends.LocalMiniLMBackend(batch_size=batch_size, threads=threads)
            local.embed_documents(texts[:8])  # load outside the timing
            rate = time_documents(local.embed_documents, texts)
            print(f"{f'torch batch={batch_size}, {label}':34s} {rate:8.1f}")
        limit = threadpool_limits(limits=threads, user_api="blas")
        rate = time_documents(lambda t: encoder.encode_batch(t, batch_size=64), texts)
        limit.restore_original_limits()
        print(f"{f'numpy batch=64, {label}':34s} {rate:8.1f}")


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
