"""HTTP plumbing every app shares (no app imports another app's views for it)."""

from __future__ import annotations

import uuid
from typing import Any


def request_id(request: Any) -> uuid.UUID | None:
    """The request's id (config.middleware.RequestIdMiddleware); DRF requests too."""
    value = getattr(request, "request_id", None)
    return value if isinstance(value, uuid.UUID) else None
