"""Import throughput: the 4,076 Seal-Tools tools into a fresh catalog, one by one
and in bulk, and the time until every tool is embedded (searchable by meaning).

Run: ``.venv/bin/python -m config.devstack test -- .venv/bin/python
bench/import_speed.py`` (devstack provides DATABASE_URL and CELERY_BROKER_URL).

Options: ``--modes single,bulk`` (single = ``QUIVER_IMPORT_CHUNK=0``, the
one-transaction-per-tool path; bulk = ``--chunk`` items per transaction, 250),
``--lag N`` (``QUIVER_IMPORT_EMBED_LAG`` of the worker, 0: the import never
embeds itself), ``--embed-batch N`` (``QUIVER_EMBED_BATCH``, 64), ``--docs N``
(documents of the in-process encoder measurements, 1,024; 0 skips them).

Per mode: a fresh ``bench-import-<mode>`` catalog and one real Celery worker
process (concurrency 2: one runs the import, the other embeds; both embed once
the import ends). Printed: items, the import's seconds (the job's started ->
finished, no queue wait), tools/s, outcomes, and the seconds from the import's
end until every tool is ``ready`` (each tool is searchable lexically as soon as
its chunk commits; by meaning once its vector lands).

Then, in process on one thread, why embedding takes what it takes: word pieces
per document, documents/s of the fp32 ONNX encoder at several batch sizes, and
int8 documents (speed, cosine to fp32 on the Seal-Tools texts and on the stored
reference vectors of tests/data/minilm_reference.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if not (Path(__file__).resolve().parents[2] / "shared" / "bench" / "data").exists():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "shared", "bench", "data")
    os.environ.setdefault("QUIVER_BENCH_DATA", os.path.normpath(default))
import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench import embeddings as eb  # noqa: E402  (sets Django up)
from catalog.choices import EmbeddingStatus  # noqa: E402
from catalog.embedding_text import embedding_text  # noqa: E402
from catalog.models import Catalog, Tool  # noqa: E402
from catalog.services.catalogs import create_catalog  # noqa: E402
from catalog.services.imports import start_import  # noqa: E402
from catalog.spec import spec_from_dict  # noqa: E402
from embeddings.backends import DOCUMENT_MAX_TOKENS  # noqa: E402
from jobs.models import Job  # noqa: E402
from selection.engine.types import SelectionRequest  # noqa: E402
from selection.services.select import select_tools  # noqa: E402

PREFIX = "bench-import"
SAMPLE = 20  # tools selected right after the import, by their descriptions
REFERENCE = eb.ROOT / "tests" / "data" / "minilm_reference.json"


def run_mode(mode: str, tools: list[dict[str, Any]], args: Any) -> list[Any]:
    """Import into a fresh catalog with a worker configured for ``mode``."""
    os.environ["QUIVER_IMPORT_CHUNK"] = "0" if mode == "single" else str(args.chunk)
    os.environ["QUIVER_IMPORT_EMBED_LAG"] = str(args.lag)
    os.environ["QUIVER_EMBED_BATCH"] = str(args.embed_batch)
    catalog = create_catalog(f"{PREFIX}-{mode}", f"Bench: import ({mode})")
    document = {"format": "quiver", "version": 1, "tools": tools}
    log = Path(tempfile.gettempdir()) / f"{PREFIX}-{mode}-{os.getpid()}.log"
    with eb.celery_worker(log):
        eb.say(f"{mode}: importing {len(tools)} tools (load {eb.load_avg()})")
        t0 = time.perf_counter()
        job = start_import(catalog, document, "canonical", actor=None)
        eb.poll_job(job.pk, t0)
        job_end = time.perf_counter()
        lexical = searchable(catalog, tools, job_end)
        eb.poll_ready(catalog.pk, len(tools), t0)
        ready_at = time.perf_counter()
        embedded = searchable(catalog, tools, time.perf_counter())
    job = Job.objects.get(pk=job.pk)
    import_s = (job.finished - job.started).total_seconds()
    outcomes = ", ".join(f"{k} {v}" for k, v in job.counts.items() if v)
    return [
        mode,
        len(tools),
        f"{import_s:.1f}",
        f"{len(tools) / import_s:.0f}",
        outcomes,
        f"{lexical[0]:.1f}",
        f"{lexical[1]}/{SAMPLE} ({lexical[2]} pending)",
        f"{ready_at - job_end:.1f}",
        f"{embedded[1]}/{SAMPLE}",
        eb.load_avg(),
    ]


def searchable(
    catalog: Catalog, tools: list[dict[str, Any]], since: float
) -> tuple[float, int, int]:
    """Select the last ``SAMPLE`` tools of the document (written last, so the
    least likely to have a vector yet) by their own descriptions, top 5: seconds
    from ``since`` until the first answer (the snapshot of the new catalog is
    built by it), how many were found, how many of them had no vector yet."""
    sample = [t for t in tools if t.get("description")][-SAMPLE:]
    names = [t["name"] for t in sample]
    pending = Tool.objects.filter(catalog=catalog, name__in=names)
    waiting = pending.exclude(embedding_status=EmbeddingStatus.READY).count()
    first, found = None, 0
    for tool in sample:
        catalog.refresh_from_db()
        request = SelectionRequest(
            query=tool["description"], max_candidates=5, allow_unsafe=True
        )
        answer = select_tools(catalog, request, fmt="canonical", actor=None)
        first = first or time.perf_counter() - since
        found += tool["name"] in answer.names
    return first or 0.0, found, waiting


def encoder_rows(texts: list[str]) -> tuple[list[list[str]], list[str]]:
    """Documents/s of the document encoder (one thread) and int8's agreement."""
    from embeddings.backends import local_onnx_encoder

    encoder = local_onnx_encoder()
    width = DOCUMENT_MAX_TOKENS + 2
    pieces = [len(encoder.tokenizer.encode(t).ids) for t in texts]
    notes = [
        f"word pieces per document (untruncated): mean {np.mean(pieces):.0f}, "
        f"p50 {np.percentile(pieces, 50):.0f}, p95 {np.percentile(pieces, 95):.0f}; "
        f"documents are read up to {width} ({np.mean(np.array(pieces) > width):.0%} "
        "are cut)"
    ]
    encoder.encode_batch(texts[:8], 8, width, "fp32")  # load the sessions
    encoder.encode_batch(texts[:8], 8, width, "int8")
    rows, fp32 = [], None
    for precision, batch in [("fp32", 16), ("fp32", 64), ("fp32", 256), ("int8", 64)]:
        start = time.perf_counter()
        vectors = encoder.encode_batch(texts, batch, width, precision)
        seconds = time.perf_counter() - start
        if precision == "fp32" and batch == 64:
            fp32 = vectors
        cosine = "" if fp32 is None else _cosines(vectors, fp32)
        rows.append([precision, str(batch), f"{len(texts) / seconds:.0f}", cosine])
    notes.append(_reference_note(encoder, width))
    return rows, notes


def _cosines(a: np.ndarray, b: np.ndarray) -> str:
    cos = np.sum(a * b, axis=1) / (
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    )
    return f"min {cos.min():.4f}, mean {cos.mean():.4f}"


def _reference_note(encoder: Any, width: int) -> str:
    """int8 and fp32 documents against the stored sentence-transformers vectors."""
    data = json.loads(REFERENCE.read_text())
    items = [item for item in data["items"] if item.get("document")]
    texts = [item["text"] for item in items]
    reference = np.array([item["document"] for item in items], dtype=np.float32)
    seen = []
    for precision in ("fp32", "int8"):
        vectors = encoder.encode_batch(texts, 64, width, precision)
        seen.append(f"{precision} {_cosines(vectors, reference)}")
    return f"cosine to the {len(texts)} reference document vectors: " + "; ".join(seen)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="single,bulk")
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--lag", type=int, default=0)
    parser.add_argument("--embed-batch", type=int, default=64)
    parser.add_argument("--docs", type=int, default=1024)
    args = parser.parse_args(argv)
    tools = eb.canonical_tools(eb.SEALTOOLS / "tools.jsonl")
    call_command("migrate", verbosity=0)
    Catalog.objects.filter(slug__startswith=PREFIX).delete()
    results = []
    try:
        for mode in args.modes.split(","):
            results.append(run_mode(mode, tools, args))
    finally:
        Catalog.objects.filter(slug__startswith=PREFIX).delete()
    print(
        f"\n## Import of Seal-Tools (1 worker, concurrency 2, lag {args.lag}, "
        f"chunk {args.chunk}, embedding batch {args.embed_batch})\n"
    )
    headers = ["path", "items", "import s", "tools/s", "outcomes"]
    headers += ["1st select s after", "found at once", "all embedded s after"]
    headers += ["found then", "load"]
    print(eb.table(headers, results))
    if args.docs > 0:
        texts = [embedding_text(spec_from_dict(t)) for t in tools[: args.docs]]
        rows, notes = encoder_rows(texts)
        print(f"\n## Document encoder, in process, 1 thread, {len(texts)} documents\n")
        print(eb.table(["precision", "batch", "documents/s", "cosine to fp32"], rows))
        print("\n" + "\n".join(f"- {note}" for note in notes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
