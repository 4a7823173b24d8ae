"""What embedding each sentence of a long request costs, in process.

    .venv/bin/python bench/sentence_cost.py [--data sealtools] [--limit 200]

For each request (the app's query encoder, fp32 ONNX, no query cache) it times
the semantic stages of /select: ``embed_query`` (the whole request, as before),
``embed_sentences`` (each sentence of a request of several,
selection.engine.sentences) and the in-process pool (``nearest`` before,
``nearest_mixed`` after). Prints p50/p95 before/after, and what one padded
batch of the sentences (the document path, not used by the app) would take.
See bench/README.md, "Quality: sentences in the default".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
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
from embeddings.backends import LocalMiniLMBackend  # noqa: E402
from selection.engine.sentences import sentence_matrix, split_sentences  # noqa: E402
from selection.engine.vectors import VectorTable  # noqa: E402


def timed(call: Callable[[], object]) -> tuple[object, float]:
    """The call's result and its wall time in ms."""
    start = time.perf_counter()
    out = call()
    return out, (time.perf_counter() - start) * 1000


def line(label: str, samples: Sequence[float]) -> str:
    """One table row: p50 and p95 of ``samples``."""
    p50, p95 = np.percentile(samples, [50, 95])
    return f"{label:<34}{p50:>9.1f}{p95:>9.1f}"


def main(argv: Sequence[str] | None = None) -> None:
    """Time both semantic paths over the data set's requests and print p50/p95."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=DATASETS, default="sealtools")
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    specs = load_specs(args.data)
    docs = EmbeddingCache(get_embedder()).get([tool_embedding_text(s) for s in specs])
    table = VectorTable.build("bench", docs.shape[1], len(specs), dict(enumerate(docs)))
    backend = LocalMiniLMBackend(cache_size=0)
    backend.embed_query("warm up the encoder")
    before, after, sentence_ms, counts, batched = [], [], [], [], []
    for query in load_queries(args.data, args.limit):
        vector, whole_ms = timed(lambda q=query.text: backend.embed_query(q))
        _, near_ms = timed(lambda v=vector: table.nearest(v, 50))
        parts = split_sentences(query.text)
        sentences, embed_ms = timed(
            lambda p=parts: sentence_matrix([backend.embed_query(s) for s in p], 384)
        )
        _, mixed_ms = timed(lambda v=vector, s=sentences: table.nearest_mixed(v, s, 50))
        _, batch_ms = timed(lambda p=parts: backend.embed_documents(p) if p else None)
        batched.append(batch_ms)
        before.append(whole_ms + near_ms)
        after.append(whole_ms + embed_ms + mixed_ms)
        sentence_ms.append(embed_ms)
        counts.append(len(parts))
    print(
        f"{args.data}: {len(before)} requests, {len(specs)} tools; "
        f"{np.mean([c > 0 for c in counts]):.0%} of several sentences "
        f"(mean {np.mean([c for c in counts if c] or [0]):.1f} sentences)"
    )
    print(f"{'ms per request':<34}{'p50':>9}{'p95':>9}")
    print(line("embed_sentences (all requests)", sentence_ms))
    print(line("embed_query + search, before", before))
    print(line("embed_query + sentences + search", after))
    print(line("(idea) sentences in one padded batch", batched))
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
