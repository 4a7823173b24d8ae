"""Every Quiver process runs numpy's BLAS on one thread unless the operator says
otherwise (config.threads): with a thread per core in each of several processes,
a small product waits for a core another process holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PROBE = (
    "import json, os, config, numpy, threadpoolctl; "
    "blas = [p['num_threads'] for p in threadpoolctl.threadpool_info() "
    "if p['user_api'] == 'blas']; "
    "print(json.dumps([blas, os.environ['OPENBLAS_NUM_THREADS']]))"
)


def _probe(**env: str) -> tuple[list[int], str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    blas, variable = json.loads(done.stdout.strip().splitlines()[-1])
    return blas, variable


def test_a_quiver_process_runs_blas_on_one_thread():
    blas, variable = _probe()
    assert variable == "1"
    assert blas and set(blas) == {1}


def test_an_operators_own_thread_count_is_kept():
    assert _probe(OPENBLAS_NUM_THREADS="3")[1] == "3"
