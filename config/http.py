"""HTTP plumbing every app shares (no app imports another app's views for it)."""

from __future__ import annotations

import uuid
from typing import Any


def request_id(request: Any) -> uuid.UUID | None:
    """The request's id (config.middleware.RequestIdMiddleware); DRF requests too."""
    value = getattr(request, "request_id", None)
    return value if isinstance(value, uuid.UUID) else None


def request_started(request: Any) -> float | None:
    """The perf_counter stamp set when the request reached Django (or None)."""
    value = getattr(request, "started", None)
    if value is None:
        value = getattr(getattr(request, "_request", None), "started", None)
    return value if isinstance(value, float) else None
