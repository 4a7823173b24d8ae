"""How large a stored text may be (nothing a caller sends can stall the
audit chain). Plain Python, shared by the API's serializers and the tool checks.

A request's text that is stored (in an audit row, or in a tool's definition) is
held to a size: a string by its length, any other JSON value by its canonical JSON
(sorted keys, compact separators, characters as they are, not ``\\u`` escapes), so
an object or a list costs what the same characters in a string would. Bounded rows
keep the sealer's and the verifier's work per audit row bounded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# A selection's query or messages, a tool call's arguments.
MAX_STORED_CHARS = 20_000
# A tool's definition (it carries a JSON Schema) and a model's output (several
# calls, each with its arguments).
MAX_TOOL_CHARS = 100_000


def canonical_length(value: Any) -> int:
    """The length of ``value`` as stored: a string's characters, any other JSON
    value's canonical text (``ValueError`` when it nests too deep to write)."""
    if isinstance(value, str):
        return len(value)
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    return len(text)


def size_problem(name: str, value: Any, limit: int = MAX_STORED_CHARS) -> str:
    """Why ``value`` may not be stored as ``name`` ("" when it may)."""
    try:
        length = canonical_length(value)
    except (TypeError, ValueError) as exc:
        return f"{name}: {exc}"
    if length <= limit:
        return ""
    return (
        f"{name}: at most {limit} characters (as canonical JSON); this one has {length}"
    )


def oversized_fields(data: Mapping[str, Any], limit: int) -> dict[str, str]:
    """Each field of ``data`` past ``limit``, with its rule; the whole under ""
    when only the whole is past it."""
    problems = {name: size_problem(name, value, limit) for name, value in data.items()}
    problems = {name: rule for name, rule in problems.items() if rule}
    if not problems and (whole := size_problem("body", dict(data), limit)):
        problems[""] = whole
    return problems
