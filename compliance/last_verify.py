"""The last chain check run from the Verify page: its result, when and by whom.

Kept as one small JSON file next to the checkpoint file (every web worker sees
it, a restart keeps it; written whole then renamed, so a reader never sees half
of it). It is a convenience for the page, not evidence: the chain and its signed
checkpoints are the evidence, and any check can be run again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from audit.verify import ChainCheck
from config import jsonparse


def _path() -> Path:
    book = Path(settings.QUIVER_AUDIT_CHECKPOINT_FILE)
    return book.with_name(book.name + ".last-verify.json")


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
    path = _path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(result))
        temporary.replace(path)
    except OSError:
        return  # the page still shows this check; only "last" is not kept


def last_check() -> dict[str, Any] | None:
    """The last check kept, with ``ran_at`` as a datetime; None if none was."""
    try:
        result = jsonparse.loads(_path().read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(result, dict):
        return None
    ran_at = parse_datetime(str(result.get("ran_at", "")))
    return {**result, "ran_at": ran_at} if ran_at else None
