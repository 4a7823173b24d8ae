"""Bench only, never served by Quiver: ``config.wsgi`` with the selection's audit
write taken out, so ``bench/http_ratio.py`` can measure what the write adds to a
``/select`` answer in the same run (issue 9: "at most 1 ms, with and without").

Quiver itself has no such switch: an answer without its audit row is refused.
"""

from __future__ import annotations

from typing import Any

from config.wsgi import application  # first: sets Django up

_ = application
from audit.writer import PendingEvent  # noqa: E402
from selection.services import select  # noqa: E402


def _not_recorded(*args: Any, **kwargs: Any) -> PendingEvent:
    return PendingEvent(None)  # type: ignore[arg-type]


select._audit = _not_recorded  # type: ignore[assignment]

__all__ = ["application"]
