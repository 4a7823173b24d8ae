"""Try it's request as a script would send it: "copy as curl" and "copy as
Python" (the ``quiver_client`` package's ``Quiver.select``).

Both carry the exact body of ``POST /api/v1/select`` the page ran, with the key
read from ``$QUIVER_API_KEY`` (a page never shows a key); the strings are quoted for
a POSIX shell and as Python literals, so any query text survives the copy."""

from __future__ import annotations

import json
import pprint
import re
import shlex
from typing import Any

_INTEGER = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$")


def _typed(value: Any) -> Any:
    """Numbers the form kept as typed text, as JSON numbers."""
    if isinstance(value, str) and _INTEGER.match(value):
        return int(value)
    if isinstance(value, str) and _NUMBER.match(value):
        return float(value)
    return value


def select_body(payload: dict[str, Any]) -> dict[str, Any]:
    return {key: _typed(value) for key, value in payload.items()}


def as_curl(base_url: str, payload: dict[str, Any]) -> str:
    body = json.dumps(select_body(payload), ensure_ascii=False, indent=2)
    url = base_url.rstrip("/") + "/api/v1/select"
    return (
        f"curl -sS -X POST {shlex.quote(url)} \\\n"
        '  -H "Authorization: Bearer $QUIVER_API_KEY" \\\n'
        "  -H 'Content-Type: application/json' \\\n"
        f"  --data-binary {shlex.quote(body)}"
    )


def _literal(value: Any) -> str:
    text = pprint.pformat(value, indent=1, width=72, sort_dicts=False)
    return text.replace("\n", "\n    ")


def as_python(base_url: str, payload: dict[str, Any]) -> str:
    body = select_body(payload)
    args = []
    if "query" in body:
        args.append(f"    {_literal(body.pop('query'))},")
    args += [f"    {key}={_literal(value)}," for key, value in body.items()]
    lines = [
        "import os",
        "",
        "from quiver_client import Quiver",
        "",
        f'quiver = Quiver({base_url.rstrip("/")!r}, key=os.environ["QUIVER_API_KEY"])',
        "answer = quiver.select(",
        *args,
        ")",
        'for tool in answer["tools"]:',
        '    print(tool["name"], tool["score"], tool["reason"])',
    ]
    return "\n".join(lines) + "\n"


def api_calls(base_url: str, payload: dict[str, Any]) -> dict[str, str]:
    return {"curl": as_curl(base_url, payload), "python": as_python(base_url, payload)}
