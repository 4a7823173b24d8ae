"""The one formula for hashing a call's arguments (and a result), shared by the
call path, approvals and the audit rows: sha256 of canonical JSON."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def arguments_hash(arguments: Any) -> str:
    """sha256 hex of the arguments as canonical JSON (sorted keys, compact)."""
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()
