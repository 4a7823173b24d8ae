"""Celery tasks are traced too: a task a traced request queues runs, in a real
worker process, as a span of the same trace (the worker here exports to its
console, OTEL_TRACES_EXPORTER=console, and the test reads the worker's log)."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from jobs import services as jobs
from telemetry import tracing
from tests.conftest import ROOT, XDIST, start_worker, stop_worker, wait_until

pytestmark = [pytest.mark.integration]


def test_a_task_runs_in_the_trace_that_queued_it(transactional_db, purged_broker):
    worker = start_worker(
        "traced",
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "100"},
    )
    log = ROOT / ".quiver" / "test" / f"worker-traced{XDIST}.log"
    tracing.start(InMemorySpanExporter(), batch=False)
    try:
        with trace.get_tracer("test").start_as_current_span("a request") as request:
            assert jobs.send(jobs.SWEEP)
        trace_id = f"0x{request.get_span_context().trace_id:032x}"

        def traced_run() -> bool:
            text = log.read_text(errors="replace")
            return trace_id in text and f"run/{jobs.SWEEP}" in text

        wait_until(traced_run, timeout=60, what="the task's span in the worker")
    finally:
        tracing.stop()
        stop_worker(worker)
