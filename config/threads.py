"""One BLAS thread per process, set before numpy is first imported.

Quiver scales out by processes (gunicorn workers, Celery's prefork pool), each
doing small matrix work per request (the static encoder's MLP, in-process cosine).
numpy's OpenBLAS starts one thread per core in every process and splits even a
2 x 384 product across them; when another process holds a core, the call waits for
its second thread to be scheduled, and the tail grows many times over (measured in
bench/README.md, "The numbers behind the code's choices"). An operator can still
set these variables otherwise.
"""

from __future__ import annotations

import os

ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    for name in ONE_THREAD:
        os.environ.setdefault(name, "1")
