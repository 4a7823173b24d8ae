"""Every Quiver process runs numpy's BLAS on one thread unless the operator says
otherwise (config.threads): with a thread per core in each of several processes,
a small product waits for a core another process holds."""

from __future__ import annotations

import json
import os

from tests.python_probe import run_python

PROBE = (
    "import json, os, config, numpy, threadpoolctl; "
    "blas = [p['num_threads'] for p in threadpoolctl.threadpool_info() "
    "if p['user_api'] == 'blas']; "
    "print(json.dumps([blas, os.environ['OPENBLAS_NUM_THREADS']]))"
)


def _probe(**env: str) -> tuple[list[int], str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    blas, variable = json.loads(run_python(PROBE, env={**clean, **env})[-1])
    return blas, variable


def test_a_quiver_process_runs_blas_on_one_thread():
    blas, variable = _probe()
    assert variable == "1"
    assert blas and set(blas) == {1}


def test_an_operators_own_thread_count_is_kept():
    assert _probe(OPENBLAS_NUM_THREADS="3")[1] == "3"
