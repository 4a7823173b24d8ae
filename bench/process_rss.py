"""Resident memory of a web-like and a worker-like process with the model loaded.

Run: ``python bench/process_rss.py`` (no database needed). Prints the peak RSS
(``ru_maxrss``) and current RSS after each stage: Django set up, one query
embedded (what a web process does), a batch of tool texts embedded (what a
worker does), and whether torch was ever imported.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MB."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        pages = int(handle.read().split()[1])
    current = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return current, peak


def report(stage: str, started: float) -> None:
    """Print one line: stage, RSS now, peak RSS, seconds since start."""
    current, peak = rss_mb()
    elapsed = time.perf_counter() - started
    print(f"{stage:38s} rss {current:7.1f} MB  peak {peak:7.1f} MB  {elapsed:6.2f} s")


def main() -> None:
    """Walk through the stages of a web process, then of a worker."""
    started = time.perf_counter()
    report("python started", started)
    import django

    django.setup()
    import django.urls

    django.urls.resolve("/")  # imports every app's urls and views
    report("django set up, urls loaded", started)
    from embeddings.backends import get_local_backend

    backend = get_local_backend()
    backend.embed_query("find flights from Berlin to Tokyo next Friday")
    report("web: model loaded + one query", started)
    texts = [f"tool number {i} that does thing {i} with parameters" for i in range(64)]
    backend.embed_documents(texts)
    report("worker: + 64 documents embedded", started)
    print(f"torch imported: {'torch' in sys.modules}")


if __name__ == "__main__":
    main()
