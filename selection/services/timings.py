"""Per-stage wall time of one /select answer (``stats.timings_ms``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from telemetry import tracing

# Each stage is also a span (quiver.select.<name>) when tracing is on; these two
# are named for what they are in a trace.
SPAN_NAMES = {"engine": "ranking", "audit": "audit_write"}
# Every answer names all of these (0.0 for a stage a cached answer skips).
STAGES = (
    "auth",
    "snapshot",
    "embed_query",
    "embed_sentences",
    "vector_search",
    "engine",
    "definitions",
    "audit",
    "total",
)
SPANS = {name: f"quiver.select.{SPAN_NAMES.get(name, name)}" for name in STAGES}


@dataclass(frozen=True)
class Arrival:
    """When a request arrived (a perf_counter stamp) and the milliseconds spent
    before its view (middleware, authentication, throttling, parsing)."""

    started: float
    auth_ms: float


class Stopwatch:
    """Milliseconds spent per named stage; ``total`` runs from ``started`` (a
    perf_counter stamp: the request's arrival when known)."""

    def __init__(self, started: float | None = None) -> None:
        self.started = time.perf_counter() if started is None else started
        self.ms: dict[str, float] = dict.fromkeys(STAGES, 0.0)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Add the time spent in the ``with`` block to stage ``name``."""
        begin = time.perf_counter()
        try:
            if tracing.ON:
                with tracing.span(SPANS.get(name) or f"quiver.select.{name}"):
                    yield
            else:
                yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - begin) * 1e3

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def report(self) -> dict[str, float]:
        """Every stage, rounded, with ``total`` as the time since ``started``."""
        out = {name: round(value, 3) for name, value in self.ms.items()}
        out["total"] = round(self.elapsed_ms(), 3)
        return out
