"""A tool call as metrics and traces see it, kept out of the call path's code.

``observed_call`` wraps ``execute_call``: one ``quiver.call`` span per call (its
steps, access, validation, approval and upstream, are child spans made where
they run), with the ``call_id``, the outcome and the approval as attributes,
never the arguments. Each recorded outcome is counted by ``call_recorded``,
called where the outcome's audit row is written, so the count and the audit
trail agree; an outcome that could not be recorded is counted ``not_recorded``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from audit.actors import Caller
from telemetry import metrics, tracing


class _Answer(Protocol):
    outcome: str
    call_id: str | None
    approval_id: str | None


A = TypeVar("A", bound=_Answer)


def observed_call(run: Callable[..., A]) -> Callable[..., A]:
    @functools.wraps(run)
    def execute(user: Caller, **options: Any) -> A:
        # The tool's name is set once the call found a tool (calls.services):
        # the name asked for is the caller's text.
        facts = {
            "gen_ai.operation.name": "execute_tool",
            "quiver.channel": options.get("channel", "api"),
            "quiver.selection_id": _text(options.get("selection_id")),
        }
        with tracing.span("quiver.call", **facts):
            try:
                answer = run(user, **options)
            except Exception as exc:
                if type(exc).__name__ == "CallNotRecorded":
                    metrics.tool_call_recorded(None, "not_recorded")
                raise
            tracing.annotate(
                **{
                    "quiver.call_id": answer.call_id,
                    "quiver.outcome": answer.outcome,
                    "quiver.approval_id": answer.approval_id,
                }
            )
        return answer

    return execute


def call_recorded(catalog: str, source: str | None, outcome: str) -> None:
    """Count one recorded outcome (``source``: the source's name, if known)."""
    label = metrics.source_name(catalog, source) if source else None
    metrics.tool_call_recorded(label, outcome)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
