"""The last chain check run from the Verify page: its result, when and by whom.

Kept as the checkpoint store's ``last_verify`` note (a small JSON file next to the
checkpoint file, or a row of ``audit_note`` in Postgres), so every web process sees
it and a restart keeps it; a file is written whole then renamed, so a reader never
sees half of it. It is a convenience for the page, not evidence: the chain and its
signed checkpoints are the evidence, and any check can be run again."""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from audit.checkpoint_store import checkpoint_store
from audit.verify import ChainCheck

NOTE = "last_verify"


def remember(check: ChainCheck | None, *, by: str, stopped: str = "") -> None:
    """Keep the outcome of a check (``stopped``: why it did not finish)."""
    result: dict[str, Any] = {"ran_at": timezone.now().isoformat(), "by": by}
    if check is None:
        result |= {"outcome": "stopped", "problem": stopped}
    else:
        result |= {
            "outcome": "intact" if check.ok else "damaged",
            "checked": check.checked,
            "seconds": check.seconds,
            "head_seq": check.head_seq,
            "kind": check.kind,
            "problem": check.problem,
            "first_bad_id": check.first_bad_id,
        }
    try:
        checkpoint_store().update_note(NOTE, lambda _: result)
    except (OSError, DatabaseError):
        return  # the page still shows this check; only "last" is not kept


def last_check() -> dict[str, Any] | None:
    """The last check kept, with ``ran_at`` as a datetime; None if none was."""
    result = checkpoint_store().read_note(NOTE)
    ran_at = parse_datetime(str(result.get("ran_at", "")))
    return {**result, "ran_at": ran_at} if ran_at else None
