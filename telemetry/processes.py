"""Which processes are alive, and what Celery workers report.

Each web process (``config/wsgi.py``) and each Celery process records its start
(``quiver_process_start_time_seconds``, a live gauge: it names the processes
whose memory a scrape reads). Celery's signals count every finished task by name
and state, with its run time.

Celery workers in a container of their own (Docker) share no directory with the
web: ``QUIVER_WORKER_METRICS_PORT`` makes a worker's main process serve its
processes' metrics on that port (``GET /metrics``, the same token), and the
database's gauges stay on the web's ``/metrics`` so no sum counts them twice.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from celery import signals
from django.conf import settings
from prometheus_client import CONTENT_TYPE_LATEST

from telemetry import metrics
from telemetry.exposition import render

log = logging.getLogger(__name__)
_started: dict[str, float] = {}
_lock = threading.Lock()


def process_started(role: str) -> None:
    metrics.PROCESS_START.labels(role).set(time.time())


def connect() -> None:
    """Connect the Celery signals (weakly held: these are module functions)."""
    signals.worker_process_init.connect(_worker_process_init)
    signals.worker_ready.connect(_worker_ready)
    signals.task_prerun.connect(_task_prerun)
    signals.task_postrun.connect(_task_postrun)


def _worker_process_init(**kwargs: Any) -> None:
    process_started("worker")


def _worker_ready(**kwargs: Any) -> None:
    process_started("worker")
    port = int(settings.QUIVER_WORKER_METRICS_PORT)
    if port:
        serve_worker_metrics(port)


def _task_prerun(task_id: str | None = None, **kwargs: Any) -> None:
    if task_id:
        with _lock:
            _started[task_id] = time.perf_counter()


def _task_postrun(
    task_id: str | None = None,
    task: Any = None,
    state: str | None = None,
    **kwargs: Any,
) -> None:
    with _lock:
        began = _started.pop(task_id or "", None)
    seconds = None if began is None else time.perf_counter() - began
    name = str(getattr(task, "name", "") or "unknown")
    metrics.task_finished(name, state or "unknown", seconds)


StartResponse = Callable[..., Any]


def worker_metrics_app(
    environ: dict[str, Any], start: StartResponse
) -> Iterable[bytes]:
    """``GET /metrics`` of this worker's processes, for the metrics token."""
    if environ.get("PATH_INFO") != "/metrics":
        start("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]
    sent = str(environ.get("HTTP_AUTHORIZATION", ""))
    token = f"Bearer {settings.QUIVER_METRICS_TOKEN}"
    if not settings.QUIVER_METRICS_TOKEN or not hmac.compare_digest(
        sent.encode(), token.encode()
    ):
        start("401 Unauthorized", [("WWW-Authenticate", 'Bearer realm="quiver"')])
        return [b"Authorization: send Bearer <metrics token>"]
    start("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
    return [render(database=False)]


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        log.debug("worker metrics: " + format, *args)


def serve_worker_metrics(port: int) -> threading.Thread:
    server = make_server("0.0.0.0", port, worker_metrics_app, handler_class=_Quiet)  # noqa: S104
    thread = threading.Thread(
        target=server.serve_forever, name="quiver-worker-metrics", daemon=True
    )
    thread.start()
    log.info("worker metrics on port %s (GET /metrics)", port)
    return thread
