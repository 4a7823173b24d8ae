"""Tracing on in this process, as ``OTEL_*`` would start it, its spans in the
OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from telemetry import tracing


@pytest.fixture
def spans(transactional_db: None) -> Iterator[InMemorySpanExporter]:
    """Tracing on in this process, exporting each span as it ends; connections
    opened from now on are traced (psycopg), so the open one is closed."""
    exporter = InMemorySpanExporter()
    tracing.start(exporter, batch=False)
    connection.close()
    try:
        yield exporter
    finally:
        tracing.stop()
        connection.close()
