"""A request's time budget, checked between pipeline stages (seed 000's timeoutMs)."""

from __future__ import annotations

import time
from collections.abc import Callable


class Deadline:
    """Expires ``timeout_ms`` after creation; ``None`` never expires.

    ``clock`` returns seconds (``time.perf_counter`` by default) and can be swapped
    in tests to simulate a slow stage.
    """

    def __init__(
        self,
        timeout_ms: float | None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.clock = clock
        self.start = clock()
        self.end = None if timeout_ms is None else self.start + timeout_ms / 1000.0

    def expired(self) -> bool:
        """True once the budget is spent (a zero budget is spent immediately)."""
        return self.end is not None and self.clock() >= self.end

    def remaining(self) -> float | None:
        """Seconds left (never negative), or ``None`` without a budget."""
        if self.end is None:
            return None
        return max(0.0, self.end - self.clock())

    def elapsed_ms(self) -> float:
        """Milliseconds since the request started."""
        return (self.clock() - self.start) * 1000.0
