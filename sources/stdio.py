"""Stdio sources: MCP servers Quiver starts as a command, configured in the
server's settings file only (``QUIVER_SOURCES_FILE``), never over the API.

The file is JSON, read at every use (a sync, a connection)::

    {"stdio": {"<name>": {"command": "...", "args": ["..."],
                          "env": {"NAME": "value"}, "cwd": "/some/dir"}}}

The env values may be secrets: they are passed to the command and never shown
(``describe`` gives only the name and the command's basename), logged or audited.
A bad file is a ``StdioConfigError`` naming the key and the rule.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from config import jsonparse

MAX_FILE_BYTES = 1_000_000
SETTING = "QUIVER_SOURCES_FILE"


class StdioConfigError(Exception):
    """The settings file is missing, unreadable or badly formed, or has no such
    name; the message names the key and the rule (never an env value)."""


@dataclass(frozen=True)
class StdioSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    cwd: str | None = None

    @property
    def fingerprint(self) -> str:
        """Changes whenever anything in the entry does (a pooled connection to
        the old command is then replaced); reveals nothing of the env."""
        text = json.dumps(
            [self.command, list(self.args), sorted(self.env.items()), self.cwd]
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> dict[str, str]:
        """What may be shown of the entry: its name and its command's basename."""
        return {"stdio_name": self.name, "command": os.path.basename(self.command)}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _entry(name: str, entry: Any) -> StdioSpec:
    where = f"{SETTING}: stdio.{name}"
    if not isinstance(entry, dict):
        raise StdioConfigError(f"{where}: must be an object")
    unknown = sorted(set(entry) - {"command", "args", "env", "cwd"})
    if unknown:
        raise StdioConfigError(f"{where}.{unknown[0]}: not a known key")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip() or "\0" in command:
        raise StdioConfigError(f"{where}.command: must be a non-empty string")
    args = entry.get("args", [])
    if not _strings(args):
        raise StdioConfigError(f"{where}.args: must be a list of strings")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(key, str) and key and isinstance(value, str)
        for key, value in env.items()
    ):
        raise StdioConfigError(f"{where}.env: must be an object of strings")
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise StdioConfigError(f"{where}.cwd: must be a non-empty string")
    return StdioSpec(name, command, tuple(args), dict(env), cwd)


def load_stdio_specs() -> dict[str, StdioSpec]:
    """Every stdio entry of the settings file (none when the setting is unset)."""
    path = str(getattr(settings, SETTING, "") or "")
    if not path:
        return {}
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise StdioConfigError(
            f"{SETTING}: cannot read {path!r} ({exc.strerror or type(exc).__name__})"
        ) from None
    if len(raw) > MAX_FILE_BYTES:
        raise StdioConfigError(f"{SETTING}: larger than {MAX_FILE_BYTES} bytes")
    try:
        data = jsonparse.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        # json's message names the line and column, never the text around it.
        where = f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise StdioConfigError(f"{SETTING}: not valid JSON {where}".strip()) from None
    if not isinstance(data, dict):
        raise StdioConfigError(f"{SETTING}: must be a JSON object")
    unknown = sorted(set(data) - {"stdio"})
    if unknown:
        raise StdioConfigError(f"{SETTING}: {unknown[0]}: not a known key")
    entries = data.get("stdio", {})
    if not isinstance(entries, dict):
        raise StdioConfigError(f"{SETTING}: stdio: must be an object of names")
    return {str(name): _entry(str(name), entry) for name, entry in entries.items()}


def stdio_spec(name: str) -> StdioSpec:
    """The entry called ``name``, or a ``StdioConfigError`` saying it is not there."""
    specs = load_stdio_specs()
    if name not in specs:
        if not getattr(settings, SETTING, ""):
            raise StdioConfigError(
                f"stdio_name: {name!r}: {SETTING} is not set, so no stdio source "
                "is configured"
            )
        raise StdioConfigError(
            f"stdio_name: {name!r} is not configured under 'stdio' in {SETTING}"
        )
    return specs[name]
